package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

const turnColumns = `u.id, u.session_id, u.message_id, u.guild_id, u.channel_id, u.author_id, u.content,
	u.state, u.round, coalesce(u.status_message_id, ''), coalesce(u.reply_message_id, ''), u.created_at, u.updated_at,
	coalesce(u.report_id, 0), u.master_failures, u.not_before`

func scanTurn(row pgx.Row) (master.Turn, error) {
	var t master.Turn
	var notBefore *time.Time
	err := row.Scan(&t.ID, &t.SessionID, &t.MessageID, &t.GuildID, &t.ChannelID, &t.AuthorID, &t.Content,
		&t.State, &t.Round, &t.StatusMessageID, &t.ReplyMessageID, &t.CreatedAt, &t.UpdatedAt, &t.ReportID, &t.MasterFailures, &notBefore)
	if errors.Is(err, pgx.ErrNoRows) {
		return master.Turn{}, master.ErrNotFound
	}
	if notBefore != nil {
		t.NotBefore = *notBefore
	}
	return t, err
}

// RecordTurn stores a message as a queued turn of its session. It is
// idempotent on the Discord message id: a redelivery returns the first
// turn with created false. A turn that waited for the user's answer is
// closed: this message answers it, and the history carries both; but when
// the question was asked for workers that need information, the message
// goes back to them and the waiting turn runs again (the message's own
// turn is then done at once).
func (s *Store) RecordTurn(ctx context.Context, t master.Turn) (master.Turn, bool, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return master.Turn{}, false, fmt.Errorf("record turn: %w", err)
	}
	defer tx.Rollback(ctx)
	turn, err := scanTurn(tx.QueryRow(ctx, `
		INSERT INTO turns AS u (session_id, message_id, guild_id, channel_id, author_id, content)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (message_id) DO NOTHING
		RETURNING `+turnColumns,
		t.SessionID, t.MessageID, t.GuildID, t.ChannelID, t.AuthorID, t.Content))
	if errors.Is(err, master.ErrNotFound) {
		turn, err = scanTurn(s.pool.QueryRow(ctx, `SELECT `+turnColumns+` FROM turns u WHERE u.message_id = $1`, t.MessageID))
		if err != nil {
			return master.Turn{}, false, fmt.Errorf("record turn: existing: %w", err)
		}
		return turn, false, nil
	}
	if err != nil {
		return master.Turn{}, false, fmt.Errorf("record turn: %w", err)
	}
	answered, err := answerWaitingTurn(ctx, tx, t.SessionID, turn.ID, t.Content)
	if err != nil {
		return master.Turn{}, false, fmt.Errorf("record turn: answer workers: %w", err)
	}
	if answered {
		turn.State = master.TurnDone
	} else if _, err := tx.Exec(ctx, `UPDATE turns SET state = 'done', updated_at = now()
		WHERE session_id = $1 AND state = 'waiting' AND id < $2`, t.SessionID, turn.ID); err != nil {
		return master.Turn{}, false, fmt.Errorf("record turn: close waiting: %w", err)
	}
	if err := notify(ctx, tx, t.SessionID); err != nil {
		return master.Turn{}, false, fmt.Errorf("record turn: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return master.Turn{}, false, fmt.Errorf("record turn: %w", err)
	}
	return turn, true, nil
}

// PendingSessions lists active sessions whose oldest open turn needs its
// master now: not started yet, or every task of its current round has
// ended. Sessions whose master is leased to another live owner are left
// out.
func (s *Store) PendingSessions(ctx context.Context, owner string) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT u.session_id
		FROM turns u
		JOIN sessions s ON s.id = u.session_id
		WHERE u.state IN ('queued', 'running')
		  AND s.state = 'active'
		  AND (s.master_owner IS NULL OR s.master_owner = $1 OR s.master_lease_until < now())
		  AND NOT EXISTS (SELECT 1 FROM turns e
		                  WHERE e.session_id = u.session_id AND e.state IN ('queued', 'running') AND e.id < u.id)
		  AND NOT EXISTS (SELECT 1 FROM tasks k
		                  WHERE k.turn_id = u.id AND k.round = u.round AND k.state IN ('queued', 'running'))
		  AND (u.not_before IS NULL OR u.not_before <= now())
		ORDER BY u.id`, owner)
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

// ReleaseMaster gives up owner's lease on a session's master.
func (s *Store) ReleaseMaster(ctx context.Context, sessionID int64, owner string) error {
	_, err := s.pool.Exec(ctx, `UPDATE sessions SET master_owner = NULL, master_lease_until = NULL
		WHERE id = $1 AND master_owner = $2`, sessionID, owner)
	if err != nil {
		return fmt.Errorf("release master: %w", err)
	}
	return nil
}

// OpenTurn returns the session's oldest queued or running turn, moving a
// queued one to running; master.ErrNotFound when there is none.
func (s *Store) OpenTurn(ctx context.Context, sessionID int64) (master.Turn, error) {
	turn, err := scanTurn(s.pool.QueryRow(ctx, `
		WITH next AS (
			SELECT id FROM turns WHERE session_id = $1 AND state IN ('queued', 'running')
			ORDER BY id LIMIT 1
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
// beforeID, oldest first, each with the answer the team posted. Turns
// that ended in a question keep their task results.
func (s *Store) History(ctx context.Context, sessionID, beforeID int64, limit int) ([]master.Exchange, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT u.id, u.author_id, u.content,
		       coalesce(string_agg(o.content, E'\n' ORDER BY o.part), ''),
		       coalesce(bool_or(o.kind = 'question'), false)
		FROM (SELECT id, author_id, content FROM turns
		      WHERE session_id = $1 AND id < $2 AND state = 'done'
		      ORDER BY id DESC LIMIT $3) u
		LEFT JOIN outbox o ON o.turn_id = u.id AND o.kind IN ('reply', 'question')
		GROUP BY u.id, u.author_id, u.content
		ORDER BY u.id`, sessionID, beforeID, limit)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	history, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Exchange, error) {
		var e master.Exchange
		err := r.Scan(&e.TurnID, &e.AuthorID, &e.Message, &e.Answer, &e.Asked)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	for i := range history {
		if !history[i].Asked {
			continue
		}
		tasks, err := s.TurnTasks(ctx, history[i].TurnID)
		if err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		history[i].Results = tasks
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

// outNonce is a Discord nonce (at most 25 characters) unique to a turn's
// message part.
func outNonce(turnID int64, kind master.OutKind, part int) string {
	return fmt.Sprintf("t%d%c%d", turnID, kind[0], part)
}

// Finish ends a guarded turn: its reply or question goes to the outbox,
// part by part, and the turn takes f.State, in one transaction. The
// unique (turn, kind, part) key makes a second finish impossible.
func (s *Store) Finish(ctx context.Context, g master.Guard, f master.Finish) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("finish turn: %w", err)
	}
	defer tx.Rollback(ctx)
	turn, err := checkGuard(ctx, tx, g)
	if err != nil {
		return fmt.Errorf("finish turn: %w", err)
	}
	n := len(f.Parts)
	replyTo, nonces, parts := make([]string, n), make([]string, n), make([]int32, n)
	for i := range f.Parts {
		parts[i] = int32(i)
		nonces[i] = outNonce(turn.ID, f.Kind, i)
	}
	if turn.AuthorID != "" { // a report's or a brief's turn has no message to reply to
		replyTo[0] = turn.MessageID // only the first part carries the reference
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO outbox (session_id, turn_id, kind, channel_id, reply_to, content, part, nonce)
		SELECT $1, $2, $3, $4, nullif(p.reply_to, ''), p.content, p.part, p.nonce
		FROM unnest($5::text[], $6::text[], $7::int[], $8::text[]) AS p(content, reply_to, part, nonce)`,
		g.SessionID, turn.ID, f.Kind, turn.ChannelID, f.Parts, replyTo, parts, nonces); err != nil {
		return fmt.Errorf("finish turn: outbox: %w", err)
	}
	if err := s.enqueueBlocked(ctx, tx, turn, f.Kind); err != nil {
		return fmt.Errorf("finish turn: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE turns SET state = $2, updated_at = now() WHERE id = $1`, turn.ID, f.State); err != nil {
		return fmt.Errorf("finish turn: %w", err)
	}
	if err := addUsage(ctx, tx, g.SessionID, f.Usage); err != nil {
		return fmt.Errorf("finish turn: %w", err)
	}
	if err := notify(ctx, tx, g.SessionID); err != nil {
		return fmt.Errorf("finish turn: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("finish turn: %w", err)
	}
	return nil
}

// Delegate enqueues the next round of a guarded turn and advances the
// turn to it, in one transaction with one wake.
func (s *Store) Delegate(ctx context.Context, g master.Guard, tasks []master.NewTask, usage master.Usage) ([]int64, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("delegate: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := checkGuard(ctx, tx, g); err != nil {
		return nil, fmt.Errorf("delegate: %w", err)
	}
	ids, err := enqueueTasks(ctx, tx, g.SessionID, g.TurnID, g.Round+1, tasks)
	if err != nil {
		return nil, fmt.Errorf("delegate: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE turns SET round = round + 1, updated_at = now() WHERE id = $1`, g.TurnID); err != nil {
		return nil, fmt.Errorf("delegate: %w", err)
	}
	if err := addUsage(ctx, tx, g.SessionID, usage); err != nil {
		return nil, fmt.Errorf("delegate: %w", err)
	}
	if err := notify(ctx, tx, g.SessionID); err != nil {
		return nil, fmt.Errorf("delegate: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("delegate: %w", err)
	}
	return ids, nil
}

// Replan replaces a guarded turn's session roster. Queued tasks of removed
// roles are cancelled (with their dependents); finished results stay.
func (s *Store) Replan(ctx context.Context, g master.Guard, roster []master.Role, usage master.Usage) ([]string, error) {
	tx, err := s.pool.Begin(ctx)
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
	if err := addUsage(ctx, tx, g.SessionID, usage); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	if err := notify(ctx, tx, g.SessionID); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	return removed, nil
}

// replaceRoster swaps a session's roster and cancels the queued tasks of
// the roles it drops. It returns the dropped names.
func replaceRoster(ctx context.Context, tx pgx.Tx, sessionID int64, roster []master.Role) ([]string, error) {
	rows, err := tx.Query(ctx, `DELETE FROM session_roles WHERE session_id = $1 RETURNING name`, sessionID)
	if err != nil {
		return nil, err
	}
	old, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if err := insertRoster(ctx, tx, sessionID, roster); err != nil {
		return nil, err
	}
	var removed []string
	for _, name := range old {
		if !slices.ContainsFunc(roster, func(r master.Role) bool { return r.Name == name }) {
			removed = append(removed, name)
		}
	}
	if len(removed) == 0 {
		return nil, nil
	}
	rows, err = tx.Query(ctx, `
		UPDATE tasks SET state = 'cancelled', error = 'role removed from the team',
		       ended_at = now(), updated_at = now()
		WHERE session_id = $1 AND state = 'queued' AND role = ANY ($2)
		RETURNING id`, sessionID, removed)
	if err != nil {
		return nil, err
	}
	cancelled, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	if len(cancelled) > 0 {
		if _, err := cancelDependents(ctx, tx, cancelled); err != nil {
			return nil, err
		}
	}
	return removed, nil
}

// DeferTurn puts off the guarded turn's next master decision by retryIn,
// counting a failure: the model could not be reached.
func (s *Store) DeferTurn(ctx context.Context, g master.Guard, retryIn time.Duration) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("defer turn: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := checkGuard(ctx, tx, g); err != nil {
		return fmt.Errorf("defer turn: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE turns SET master_failures = master_failures + 1,
		not_before = now() + $2::interval, updated_at = now() WHERE id = $1`, g.TurnID, retryIn); err != nil {
		return fmt.Errorf("defer turn: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("defer turn: %w", err)
	}
	return nil
}
