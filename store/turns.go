package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

const turnColumns = `u.id, u.session_id, u.message_id, u.guild_id, u.channel_id, u.author_id, u.content,
	u.state, u.round, coalesce(u.status_message_id, ''), coalesce(u.reply_message_id, ''), u.created_at, u.updated_at,
	coalesce(u.report_id, 0), u.master_failures, u.not_before, u.master_calls, coalesce(u.addressed_to, ''), u.author_bot`

// scanTurn reads one row of turnColumns followed by extra columns.
func scanTurn(row pgx.Row, extra ...any) (master.Turn, error) {
	var t master.Turn
	var notBefore *time.Time
	dest := append([]any{&t.ID, &t.SessionID, &t.MessageID, &t.GuildID, &t.ChannelID, &t.AuthorID, &t.Content,
		&t.State, &t.Round, &t.StatusMessageID, &t.ReplyMessageID, &t.CreatedAt, &t.UpdatedAt, &t.ReportID,
		&t.MasterFailures, &notBefore, &t.MasterCalls, &t.AddressedTo, &t.AuthorBot}, extra...)
	err := row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return master.Turn{}, master.ErrNotFound
	}
	t.NotBefore = orZero(notBefore)
	return t, err
}

// turnSortKey orders a turn among its session's: the snowflake of its
// Discord message, or of the time it is recorded for a turn without one
// (a report's, a brief's).
func turnSortKey(messageID string) int64 {
	if n, ok := master.ParseSnowflake(messageID); ok {
		return n
	}
	return master.Snowflake(time.Now())
}

// RecordTurn stores a message as a queued turn of its session. It is
// idempotent on the Discord message id: a redelivery returns the first
// turn with created false. Turns are answered in the order of their
// messages' ids, whatever order they are recorded in. A turn that waited
// for the user's answer is closed: this message answers it, and the
// history carries both; but when the question was asked for workers that
// need information, the message goes back to them and the waiting turn
// runs again (the message's own turn is then done at once).
//
// A turn given with state master.TurnRefused is recorded as refused: it
// is never answered, and never picked up again. So is one that a refuses:
// its session already has a.MaxOpen turns queued or running, or its
// author started a.PerMinute turns in the guild within the last minute.
// Those counts are taken under a lock per session and one per author in
// the guild, so messages recorded at once, in one thread or several,
// cannot exceed them together. The first refused turn since the
// session's last admitted one queues the notice a gives for its reason.
//
// The message's files (t.Attachments) are recorded with the turn, in the
// same transaction; a message with files is never taken as the answer to
// workers' questions: it is a turn of its own, so its master sees them.
func (s *Store) RecordTurn(ctx context.Context, t master.Turn, a master.Admission) (master.Turn, bool, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return master.Turn{}, false, fmt.Errorf("record turn: %w", err)
	}
	defer tx.Rollback(ctx)
	state, notice := master.TurnQueued, ""
	if t.State == master.TurnRefused {
		state, notice = master.TurnRefused, a.Refused
	}
	// A redelivered message conflicts on its id below and changes nothing.
	if state == master.TurnQueued && (a.MaxOpen > 0 || a.PerMinute > 0 || (t.AuthorBot && a.BotPerHour > 0)) {
		if state, notice, err = admit(ctx, tx, t, a); err != nil {
			return master.Turn{}, false, fmt.Errorf("record turn: %w", err)
		}
	}
	key := turnSortKey(t.MessageID)
	var waiting bool // an older turn waits for the user's answer
	turn, err := scanTurn(tx.QueryRow(ctx, `
		INSERT INTO turns AS u (session_id, message_id, guild_id, channel_id, author_id, content, sort_key, state, addressed_to, author_bot)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, nullif($9, ''), $10)
		ON CONFLICT (message_id) DO NOTHING
		RETURNING `+turnColumns+`,
		    EXISTS (SELECT 1 FROM turns w WHERE w.session_id = u.session_id AND w.state = 'waiting' AND w.sort_key < u.sort_key)`,
		t.SessionID, t.MessageID, t.GuildID, t.ChannelID, t.AuthorID, cleanText(t.Content), key, state, t.AddressedTo, t.AuthorBot), &waiting)
	if errors.Is(err, master.ErrNotFound) {
		turn, err = scanTurn(tx.QueryRow(ctx, `SELECT `+turnColumns+` FROM turns u WHERE u.message_id = $1`, t.MessageID))
		if err != nil {
			return master.Turn{}, false, fmt.Errorf("record turn: existing: %w", err)
		}
		return turn, false, nil
	}
	if err != nil {
		return master.Turn{}, false, fmt.Errorf("record turn: %w", err)
	}
	if state == master.TurnRefused {
		if err := noticeRefusal(ctx, tx, turn, notice); err != nil {
			return master.Turn{}, false, fmt.Errorf("record turn: %w", err)
		}
		return turn, true, tx.Commit(ctx)
	}
	if err := insertAttachments(ctx, tx, turn, t.Attachments); err != nil {
		return master.Turn{}, false, fmt.Errorf("record turn: %w", err)
	}
	if t.Echo != "" {
		if err := queueNotice(ctx, tx, t.SessionID, master.OutNotice, turn.ChannelID, t.Echo); err != nil {
			return master.Turn{}, false, fmt.Errorf("record turn: %w", err)
		}
	}
	answered := false
	if waiting && len(t.Attachments) == 0 {
		answered, err = answerWaitingTurn(ctx, tx, t.SessionID, turn.ID, key, cleanText(t.Content), s.attempts())
		if err != nil {
			return master.Turn{}, false, fmt.Errorf("record turn: answer workers: %w", err)
		}
	}
	if answered {
		turn.State = master.TurnDone
	} else if waiting {
		if _, err := tx.Exec(ctx, `UPDATE turns SET state = 'done', updated_at = now()
			WHERE session_id = $1 AND state = 'waiting' AND sort_key < $2`, t.SessionID, key); err != nil {
			return master.Turn{}, false, fmt.Errorf("record turn: close waiting: %w", err)
		}
	}
	if err := notify(ctx, tx, WakeMaster, t.SessionID); err != nil {
		return master.Turn{}, false, fmt.Errorf("record turn: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return master.Turn{}, false, fmt.Errorf("record turn: %w", err)
	}
	return turn, true, nil
}

// admit decides, under the session's lock, whether a message is queued or
// refused by a's limits, and with which notice.
func admit(ctx context.Context, tx pgx.Tx, t master.Turn, a master.Admission) (master.TurnState, string, error) {
	author := ""
	if a.PerMinute > 0 {
		author = t.AuthorID
	}
	if err := lockAdmission(ctx, tx, t.SessionID, t.GuildID, author); err != nil {
		return "", "", err
	}
	var open, recent int
	if err := tx.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM turns WHERE session_id = $1 AND state IN ('queued', 'running')),
		       CASE WHEN $4 > 0 THEN (SELECT count(*) FROM turns WHERE author_id = $2 AND guild_id = $3
		                              AND created_at > now() - interval '1 minute' AND state <> 'refused')
		       ELSE 0 END`, t.SessionID, t.AuthorID, t.GuildID, a.PerMinute).Scan(&open, &recent); err != nil {
		return "", "", fmt.Errorf("admit: %w", err)
	}
	switch {
	case a.MaxOpen > 0 && open >= a.MaxOpen:
		return master.TurnRefused, a.QueueFull, nil
	case a.PerMinute > 0 && t.AuthorID != "" && recent >= a.PerMinute:
		return master.TurnRefused, a.RateLimited, nil
	}
	if t.AuthorBot && a.BotPerHour > 0 {
		n, err := botTurns(ctx, tx, t.GuildID, t.AuthorID)
		if err != nil {
			return "", "", fmt.Errorf("admit: %w", err)
		}
		if n >= a.BotPerHour {
			return master.TurnRefused, a.BotCapped, nil
		}
	}
	return master.TurnQueued, "", nil
}

// BotTurns counts the turns a bot started in a guild within the last
// hour: its messages in team threads and the teams it started (refused
// ones left out). A check before work; admission counts again, locked.
func (s *Store) BotTurns(ctx context.Context, guildID, botID string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, botTurnsSQL, guildID, botID).Scan(&n); err != nil {
		return 0, fmt.Errorf("bot turns: %w", err)
	}
	return n, nil
}

const botTurnsSQL = `SELECT count(*) FROM turns WHERE guild_id = $1 AND author_id = $2 AND author_bot
	AND created_at > now() - interval '1 hour' AND state <> 'refused'`

// botTurns counts, under a lock per guild and bot held until tx ends,
// the turns a bot started in a guild within the last hour: its messages
// in team threads and the teams it started. So messages recorded at once
// in different threads cannot exceed the cap together. The lock is taken
// after any other: no cycle.
func botTurns(ctx context.Context, tx pgx.Tx, guildID, botID string) (int, error) {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('bot/' || $1 || '/' || $2, 0))`, guildID, botID); err != nil {
		return 0, fmt.Errorf("lock bot: %w", err)
	}
	var n int
	if err := tx.QueryRow(ctx, botTurnsSQL, guildID, botID).Scan(&n); err != nil {
		return 0, fmt.Errorf("count bot turns: %w", err)
	}
	return n, nil
}

// lockSessionTurns serialises, until tx ends, the admission of a
// session's messages.
func lockSessionTurns(ctx context.Context, tx pgx.Tx, sessionID int64) error {
	return lockAdmission(ctx, tx, sessionID, "", "")
}

// lockAdmission serialises, until tx ends, the admission of a session's
// messages and, with an author, of that author's messages in the guild
// (whatever their thread), in one statement: the session's lock first,
// then the author's, always in that order (and the bot's lock, when
// taken, after both: no cycle).
func lockAdmission(ctx context.Context, tx pgx.Tx, sessionID int64, guildID, author string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('turns/' || $1::bigint, 0)),
		CASE WHEN $3 <> '' THEN pg_advisory_xact_lock(hashtextextended('author/' || $2 || '/' || $3, 0)) END`,
		sessionID, guildID, author); err != nil {
		return fmt.Errorf("lock admission: %w", err)
	}
	return nil
}

// noticeRefusal queues notice in a refused turn's thread if the turn is
// the first refused one recorded since the session's last admitted turn
// (in recording order, whatever the messages' own order): a burst of
// refused messages is told once. The session's lock makes refusals
// recorded at once see each other.
func noticeRefusal(ctx context.Context, tx pgx.Tx, turn master.Turn, notice string) error {
	if notice == "" {
		return nil
	}
	if err := lockSessionTurns(ctx, tx, turn.SessionID); err != nil {
		return err
	}
	var first bool
	if err := tx.QueryRow(ctx, `
		SELECT NOT EXISTS (
			SELECT 1 FROM turns r WHERE r.session_id = $1 AND r.state = 'refused' AND r.id <> $2
			  AND r.id > coalesce((SELECT max(a.id) FROM turns a
			                       WHERE a.session_id = $1 AND a.state <> 'refused'), 0))`,
		turn.SessionID, turn.ID).Scan(&first); err != nil {
		return fmt.Errorf("refusal notice: %w", err)
	}
	if !first {
		return nil
	}
	if err := queueNotice(ctx, tx, turn.SessionID, master.OutNotice, turn.ChannelID, notice); err != nil {
		return err
	}
	return notify(ctx, tx, WakeOutbox, turn.SessionID)
}

// PendingSessions lists active sessions of scope whose next turn needs
// its master now: not started yet, or every task of its current round has ended (a
// task waiting for an approval has not), and none of its files still to
// download. A session's next turn is its running one, else its first
// queued one in message order. Sessions whose master is leased to another
// live owner are left out.
func (s *Store) PendingSessions(ctx context.Context, scope master.Scope, owner string) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT s.id
		FROM sessions s
		CROSS JOIN LATERAL (
			SELECT u.id, u.round, u.not_before FROM turns u
			WHERE u.session_id = s.id AND u.state IN ('queued', 'running')
			ORDER BY u.state = 'running' DESC, u.sort_key, u.id
			LIMIT 1
		) u
		WHERE s.state = 'active' AND s.surface = $2 AND ($3 = '' OR s.attached_to = $3)
		  AND (s.master_owner IS NULL OR s.master_owner = $1 OR s.master_lease_until < now())
		  AND NOT EXISTS (SELECT 1 FROM tasks k
		                  WHERE k.turn_id = u.id AND k.round = u.round AND k.state IN ('queued', 'running', 'approval'))
		  AND NOT EXISTS (SELECT 1 FROM attachments a WHERE a.turn_id = u.id AND a.state = 'pending')
		  AND (u.not_before IS NULL OR u.not_before <= now())
		ORDER BY u.id`, owner, scope.Of(), scope.Attached)
	if err != nil {
		return nil, fmt.Errorf("pending sessions: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("pending sessions: %w", err)
	}
	return ids, nil
}

// AcquireMaster leases a session's master to owner, or extends owner's
// lease. It reports false when another owner holds a live lease or the
// session is no longer active.
func (s *Store) AcquireMaster(ctx context.Context, sessionID int64, owner string, lease time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE sessions SET master_owner = $2, master_lease_until = now() + $3::interval
		WHERE id = $1 AND state = 'active'
		  AND (master_owner IS NULL OR master_owner = $2 OR master_lease_until < now())`,
		sessionID, owner, lease)
	if err != nil {
		return false, fmt.Errorf("acquire master: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// nextTurnOrder picks a session's turn to open among its queued and
// running ones (t): the running one, else the first queued in message
// order.
const nextTurnOrder = `ORDER BY t.state = 'running' DESC, t.sort_key, t.id LIMIT 1`

// StartTurn leases a session's master to owner (or extends owner's
// lease) and opens its turn, as AcquireMaster then OpenTurn do, in one
// statement: the start of a master step. master.ErrNotFound when another
// owner holds a live lease, the session is no longer active, or it has no
// turn to open (the lease is then taken all the same: release it).
func (s *Store) StartTurn(ctx context.Context, sessionID int64, owner string, lease time.Duration) (master.Turn, error) {
	turn, err := scanTurn(s.pool.QueryRow(ctx, `
		WITH leased AS (
			UPDATE sessions SET master_owner = $2, master_lease_until = now() + $3::interval
			WHERE id = $1 AND state = 'active'
			  AND (master_owner IS NULL OR master_owner = $2 OR master_lease_until < now())
			RETURNING id
		), next AS (
			SELECT t.id FROM turns t JOIN leased l ON l.id = t.session_id
			WHERE t.state IN ('queued', 'running')
			`+nextTurnOrder+`
		)
		UPDATE turns u SET state = 'running', updated_at = CASE WHEN u.state = 'queued' THEN now() ELSE u.updated_at END
		FROM next WHERE u.id = next.id
		RETURNING `+turnColumns, sessionID, owner, lease))
	if err != nil && !errors.Is(err, master.ErrNotFound) {
		return turn, fmt.Errorf("start turn: %w", err)
	}
	return turn, err
}

// ReleaseMaster gives up owner's lease on a session's master.
func (s *Store) ReleaseMaster(ctx context.Context, sessionID int64, owner string) error {
	_, err := s.pool.Exec(ctx, `UPDATE sessions SET master_owner = NULL, master_lease_until = NULL
		WHERE id = $1 AND master_owner = $2`, sessionID, owner)
	if err != nil {
		return fmt.Errorf("release master: %w", err)
	}
	return nil
}

// OpenTurn returns the session's running turn, else its first queued one
// in message order, moving it to running; master.ErrNotFound when there
// is none.
func (s *Store) OpenTurn(ctx context.Context, sessionID int64) (master.Turn, error) {
	turn, err := scanTurn(s.pool.QueryRow(ctx, `
		WITH next AS (
			SELECT t.id FROM turns t WHERE t.session_id = $1 AND t.state IN ('queued', 'running')
			`+nextTurnOrder+`
		)
		UPDATE turns u SET state = 'running', updated_at = CASE WHEN u.state = 'queued' THEN now() ELSE u.updated_at END
		FROM next WHERE u.id = next.id
		RETURNING `+turnColumns, sessionID))
	if err != nil && !errors.Is(err, master.ErrNotFound) {
		return turn, fmt.Errorf("open turn: %w", err)
	}
	return turn, err
}

// History returns up to limit finished turns of a session before turn
// beforeID, oldest first, each with the last answer the team posted for
// it (its reply, or the question it ended on). Turns that ended in a
// question keep their task results. It is one statement when no turn
// asked (the master reads it before every decision), else two: a done
// turn and its tasks no longer change, so they need no common snapshot.
func (s *Store) History(ctx context.Context, sessionID, beforeID int64, limit int) ([]master.Exchange, error) {
	rows, err := s.pool.Query(ctx, historySQL, sessionID, beforeID, limit)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	history, err := collectHistory(rows)
	if err != nil {
		return nil, err
	}
	return historyResults(ctx, s.pool, history)
}

// historySQL reads History's exchanges: $1 the session, $2 the turn they
// come before, $3 the limit.
const historySQL = `
		SELECT u.id, u.author_id, u.author_bot, u.content,
		       coalesce((SELECT string_agg(o.content, E'\n' ORDER BY o.part) FROM outbox o
		                 WHERE o.turn_id = u.id AND o.kind = last.kind AND o.seq = last.seq), ''),
		       coalesce(last.kind = 'question', false)
		FROM (SELECT id, author_id, author_bot, content, sort_key FROM turns
		      WHERE session_id = $1 AND state = 'done'
		        AND sort_key < (SELECT sort_key FROM turns WHERE id = $2)
		      ORDER BY sort_key DESC, id DESC LIMIT $3) u
		LEFT JOIN LATERAL (
			SELECT o.kind, o.seq FROM outbox o
			WHERE o.turn_id = u.id AND o.kind IN ('reply', 'question')
			ORDER BY o.id DESC LIMIT 1
		) last ON true
		ORDER BY u.sort_key, u.id`

func collectHistory(rows pgx.Rows) ([]master.Exchange, error) {
	history, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Exchange, error) {
		var e master.Exchange
		err := r.Scan(&e.TurnID, &e.AuthorID, &e.AuthorBot, &e.Message, &e.Answer, &e.Asked)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return history, nil
}

// historyResults adds their tasks' results to the exchanges that ended in
// a question: one more statement when there is any.
func historyResults(ctx context.Context, q querier, history []master.Exchange) ([]master.Exchange, error) {
	var asked []int64
	index := map[int64]int{}
	for i, e := range history {
		if e.Asked {
			asked = append(asked, e.TurnID)
			index[e.TurnID] = i
		}
	}
	if len(asked) > 0 {
		rows, err := q.Query(ctx, `SELECT `+taskColumns+` FROM tasks t WHERE t.turn_id = ANY ($1) ORDER BY t.id`, asked)
		if err != nil {
			return nil, fmt.Errorf("history: results: %w", err)
		}
		tasks, err := collectTasks(rows)
		if err != nil {
			return nil, fmt.Errorf("history: results: %w", err)
		}
		for _, t := range tasks {
			i := index[t.TurnID]
			history[i].Results = append(history[i].Results, t)
		}
	}
	return history, nil
}

// checkGuard locks the guarded turn, or returns master.ErrStale when the
// turn moved on, the session ended, or g.Owner lost the master lease.
func checkGuard(ctx context.Context, tx pgx.Tx, g master.Guard) (master.Turn, error) {
	turn, err := scanTurn(tx.QueryRow(ctx, `
		SELECT `+turnColumns+` FROM turns u JOIN sessions s ON s.id = u.session_id
		WHERE u.id = $1 AND u.session_id = $2 AND u.state = 'running' AND u.round = $3
		  AND s.state = 'active' AND s.master_owner = $4 AND s.master_lease_until > now()
		FOR UPDATE OF u`, g.TurnID, g.SessionID, g.Round, g.Owner))
	if errors.Is(err, master.ErrNotFound) {
		return turn, fmt.Errorf("turn %d round %d: %w", g.TurnID, g.Round, master.ErrStale)
	}
	return turn, err
}

// outNonce is a Discord nonce (at most 25 characters) unique to a part of
// a turn's reply, or of its seq-th question.
func outNonce(turnID int64, kind master.OutKind, seq, part int) string {
	if kind == master.OutQuestion {
		return fmt.Sprintf("t%dq%d.%d", turnID, seq, part)
	}
	return fmt.Sprintf("t%d%c%d", turnID, kind[0], part)
}

// Finish ends a guarded turn: its reply or question goes to the outbox,
// part by part, and the turn takes f.State, atomically (see FinishTurn).
func (s *Store) Finish(ctx context.Context, g master.Guard, f master.Finish) error {
	_, err := s.FinishTurn(ctx, g, f)
	return err
}

// FinishTurn ends a guarded turn: its reply or question goes to the
// outbox, part by part, the turn takes f.State (a question closes any
// other turn still waiting for an answer: at most one waits, the one that
// asked last, so an answer is never taken for the wrong question), and
// the session's outbox is woken, all in one statement, one round trip and
// one commit (the decision's model calls were charged as they returned). It reports whether
// another turn of the session is queued. The unique (turn, kind, seq,
// part) key allows one reply per turn; a turn may ask any number of
// questions (a turn resumed by the user's answer may ask again), each
// numbered by seq and posted once.
func (s *Store) FinishTurn(ctx context.Context, g master.Guard, f master.Finish) (next bool, err error) {
	parts := cleanAll(f.Parts)
	faces, err := personaColumn(f.Personas, len(parts))
	if err != nil {
		return false, fmt.Errorf("finish turn: %w", err)
	}
	payload := payloadOf(WakeOutbox, strconv.FormatInt(g.SessionID, 10))
	args := []any{g.TurnID, g.SessionID, g.Round, g.Owner, f.Kind, f.State, parts, WakeChannel, payload, faces}
	var turn master.Turn
	scan := func(row pgx.Row) error { return row.Scan(&turn.ID, &turn.Round, &turn.MessageID, &next) }
	if s.webhooks.Load() && f.Kind == master.OutReply {
		// The turn's blocked tasks become a webhook event with the
		// reply: a transaction of two statements.
		tx, err := s.begin(ctx)
		if err != nil {
			return false, fmt.Errorf("finish turn: %w", err)
		}
		defer rollback(ctx, tx)
		err = scan(tx.QueryRow(ctx, finishSQL, args...))
		if errors.Is(err, pgx.ErrNoRows) {
			return false, fmt.Errorf("finish turn %d round %d: %w", g.TurnID, g.Round, master.ErrStale)
		}
		if err != nil {
			return false, fmt.Errorf("finish turn: %w", err)
		}
		tx.wake(payload)
		turn.SessionID = g.SessionID
		if err := s.enqueueBlocked(ctx, tx, turn, f.Kind); err != nil {
			return false, fmt.Errorf("finish turn: %w", err)
		}
		if err := tx.Commit(ctx); err != nil {
			return false, fmt.Errorf("finish turn: %w", err)
		}
		return next, nil
	}
	err = s.queryNotifying(ctx, payload, func(q querier) error { return scan(q.QueryRow(ctx, finishSQL, args...)) })
	if errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("finish turn %d round %d: %w", g.TurnID, g.Round, master.ErrStale)
	}
	if err != nil {
		return false, fmt.Errorf("finish turn: %w", err)
	}
	return next, nil
}

// finishSQL is FinishTurn's statement: $1 turn, $2 session, $3 round, $4
// owner (the guard); $5 kind, $6 the turn's new state, $7 the parts, $10
// each part's persona (NULL: callon's own voice); $8 and $9 the wake. It
// returns the turn's id, round and message, and whether another turn is
// queued; no row when the guard does not hold. The nonces are outNonce's.
var finishSQL = `
	WITH g AS (
		SELECT u.id, u.round, u.session_id, u.channel_id, u.message_id, u.author_id, s.guild_id
		FROM turns u JOIN sessions s ON s.id = u.session_id
		WHERE u.id = $1 AND u.session_id = $2 AND u.state = 'running' AND u.round = $3
		  AND s.state = 'active' AND s.master_owner = $4 AND s.master_lease_until > now()
		FOR UPDATE OF u
	), q AS (
		SELECT CASE WHEN $5::text = 'question'
		            THEN coalesce((SELECT max(o.seq) + 1 FROM outbox o WHERE o.turn_id = $1 AND o.kind = 'question'), 0)
		            ELSE 0 END AS seq
	), parts AS (
		INSERT INTO outbox (session_id, turn_id, kind, channel_id, reply_to, content, part, nonce, seq, persona)
		SELECT g.session_id, g.id, $5, g.channel_id,
		       -- A report's, a brief's or an API message's turn has no
		       -- Discord message to reply to.
		       CASE WHEN p.ord = 1 AND g.author_id <> '' AND g.message_id NOT LIKE '` + master.APIMessagePrefix + `%' THEN g.message_id END,
		       p.content, p.ord - 1,
		       CASE WHEN $5 = 'question' THEN 't' || g.id || 'q' || q.seq || '.' || (p.ord - 1)
		            ELSE 't' || g.id || left($5, 1) || (p.ord - 1) END,
		       q.seq, p.persona
		FROM g, q, unnest($7::text[], $10::jsonb[]) WITH ORDINALITY AS p(content, persona, ord)
	), ended AS (
		UPDATE turns w SET state = CASE WHEN w.id = g.id THEN $6 ELSE 'done' END, updated_at = now()
		FROM g WHERE w.id = g.id OR ($6 = 'waiting' AND w.session_id = g.session_id AND w.state = 'waiting')
	), woken AS (
		SELECT pg_notify($8, $9) FROM g
	)
	SELECT g.id, g.round, g.message_id, EXISTS (SELECT 1 FROM turns x WHERE x.session_id = g.session_id AND x.state = 'queued')
	FROM g, (SELECT count(*) FROM woken) w`

// queueTurnParts writes a turn's reply (or its seq-th question) to the
// outbox, part by part; only the first part replies to the turn's
// message.
func queueTurnParts(ctx context.Context, tx pgx.Tx, turn master.Turn, kind master.OutKind, seq int, texts []string) error {
	mark(tx, WakeOutbox)
	n := len(texts)
	replyTo, nonces, parts, contents := make([]string, n), make([]string, n), make([]int32, n), make([]string, n)
	for i, p := range texts {
		parts[i] = int32(i)
		nonces[i] = outNonce(turn.ID, kind, seq, i)
		contents[i] = cleanText(p)
	}
	// A report's, a brief's or an API message's turn has no Discord
	// message to reply to.
	if turn.AuthorID != "" && !strings.HasPrefix(turn.MessageID, master.APIMessagePrefix) && n > 0 {
		replyTo[0] = turn.MessageID
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO outbox (session_id, turn_id, kind, channel_id, reply_to, content, part, nonce, seq)
		SELECT $1, $2, $3, $4, nullif(p.reply_to, ''), p.content, p.part, p.nonce, $9
		FROM unnest($5::text[], $6::text[], $7::int[], $8::text[]) AS p(content, reply_to, part, nonce)`,
		turn.SessionID, turn.ID, kind, turn.ChannelID, contents, replyTo, parts, nonces, seq); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	return nil
}

// Delegate enqueues the next round of a guarded turn and advances the
// turn to it and wakes the workers, in one statement (one round trip,
// one commit). It returns the tasks' ids in order.
func (s *Store) Delegate(ctx context.Context, g master.Guard, tasks []master.NewTask) ([]int64, error) {
	input, err := batchJSON(tasks)
	if err != nil {
		return nil, fmt.Errorf("delegate: %w", err)
	}
	payload := payloadOf(WakeTasks, strconv.FormatInt(g.SessionID, 10))
	var ids []int64
	err = s.queryNotifying(ctx, payload, func(q querier) error {
		rows, err := q.Query(ctx, `
			WITH g AS (
				SELECT u.id, u.round, u.session_id, s.guild_id
				FROM turns u JOIN sessions s ON s.id = u.session_id
				WHERE u.id = $2 AND u.session_id = $1 AND u.state = 'running' AND u.round = $3
				  AND s.state = 'active' AND s.master_owner = $7 AND s.master_lease_until > now()
				FOR UPDATE OF u
			), `+enqueueCTEs("g", "$4", "$1", "$2", "$3 + 1", "$5")+`, advanced AS (
				UPDATE turns u SET round = u.round + 1, updated_at = now() FROM g WHERE u.id = g.id
			), woken AS (
				SELECT pg_notify($6, $8) FROM g
			)
			SELECT i.id FROM input i, g, (SELECT count(*) FROM woken) w ORDER BY i.ord`,
			g.SessionID, g.TurnID, g.Round, input, s.attempts(), WakeChannel, g.Owner, payload)
		if err != nil {
			return err
		}
		if ids, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return err
		}
		if len(ids) == 0 {
			return pgx.ErrNoRows
		}
		return nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("delegate: turn %d round %d: %w", g.TurnID, g.Round, master.ErrStale)
	}
	if err != nil {
		return nil, fmt.Errorf("delegate: %w", err)
	}
	if len(ids) != len(tasks) {
		return nil, fmt.Errorf("delegate: inserted %d tasks, want %d", len(ids), len(tasks))
	}
	return ids, nil
}

// Replan replaces a guarded turn's session roster. Queued tasks of removed
// roles are cancelled (with their dependents); finished results stay.
func (s *Store) Replan(ctx context.Context, g master.Guard, roster []master.Role) ([]string, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := checkGuard(ctx, tx, g); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	removed, err := replaceRoster(ctx, tx, g.SessionID, roster)
	if err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	if err := notify(ctx, tx, WakeTasks+WakeOutbox, g.SessionID); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	return removed, nil
}

// FailTurn counts a failed master decision on the guarded turn and puts
// its next one off by retryIn; it returns the failures counted so far.
// The guard's round is not checked: a failure may follow a change the
// decision made.
func (s *Store) FailTurn(ctx context.Context, g master.Guard, retryIn time.Duration) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		UPDATE turns u SET master_failures = u.master_failures + 1,
		       not_before = now() + $4::interval, updated_at = now()
		FROM sessions s
		WHERE u.id = $1 AND s.id = u.session_id AND u.session_id = $2 AND u.state = 'running'
		  AND s.state = 'active' AND s.master_owner = $3
		RETURNING u.master_failures`, g.TurnID, g.SessionID, g.Owner, retryIn).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("fail turn %d: %w", g.TurnID, master.ErrStale)
	}
	if err != nil {
		return 0, fmt.Errorf("fail turn: %w", err)
	}
	return n, nil
}

// AbandonTurn ends a running turn whatever its round, the last resort when
// finishing it normally failed: text is queued as its reply unless it has
// one, and the turn is done. It needs only the master lease.
func (s *Store) AbandonTurn(ctx context.Context, g master.Guard, text string) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("abandon turn: %w", err)
	}
	defer tx.Rollback(ctx)
	turn, err := scanTurn(tx.QueryRow(ctx, `
		SELECT `+turnColumns+` FROM turns u JOIN sessions s ON s.id = u.session_id
		WHERE u.id = $1 AND u.session_id = $2 AND u.state = 'running'
		  AND s.state = 'active' AND s.master_owner = $3
		FOR UPDATE OF u`, g.TurnID, g.SessionID, g.Owner))
	if errors.Is(err, master.ErrNotFound) {
		return fmt.Errorf("abandon turn %d: %w", g.TurnID, master.ErrStale)
	}
	if err != nil {
		return fmt.Errorf("abandon turn: %w", err)
	}
	var replied bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox WHERE turn_id = $1 AND kind = 'reply')`, turn.ID).Scan(&replied); err != nil {
		return fmt.Errorf("abandon turn: %w", err)
	}
	if !replied {
		if err := queueTurnParts(ctx, tx, turn, master.OutReply, 0, []string{text}); err != nil {
			return fmt.Errorf("abandon turn: %w", err)
		}
	}
	if _, err := cancelTurnTasks(ctx, tx, turn.ID, "the turn was ended"); err != nil {
		return fmt.Errorf("abandon turn: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE turns SET state = 'done', updated_at = now() WHERE id = $1`, turn.ID); err != nil {
		return fmt.Errorf("abandon turn: %w", err)
	}
	if err := notify(ctx, tx, WakeOutbox+WakeTasks, g.SessionID); err != nil {
		return fmt.Errorf("abandon turn: %w", err)
	}
	return tx.Commit(ctx)
}
