package store

import (
	"context"
	"errors"
	"fmt"
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

// nextTurnOrder picks a session's turn to open among its queued and
// running ones (t): the running one, else the first queued in message
// order.
const nextTurnOrder = `ORDER BY t.state = 'running' DESC, t.sort_key, t.id LIMIT 1`

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
