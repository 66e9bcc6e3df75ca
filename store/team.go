package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// TeamView reads what /team shows: the session, its roster, its open turn
// (else its latest) with that turn's tasks and progress, and its latest
// signals, oldest first.
func (s *Store) TeamView(ctx context.Context, sessionID int64, signals int) (master.TeamView, error) {
	var v master.TeamView
	var err error
	if v.Session, err = s.Session(ctx, sessionID); err != nil {
		return v, err
	}
	if v.Roster, err = s.Roster(ctx, sessionID); err != nil {
		return v, err
	}
	turn, err := scanTurn(s.pool.QueryRow(ctx, `SELECT `+turnColumns+` FROM turns u WHERE u.session_id = $1
		ORDER BY (u.state IN ('queued', 'running', 'waiting')) DESC, u.id DESC LIMIT 1`, sessionID))
	switch {
	case errors.Is(err, master.ErrNotFound):
	case err != nil:
		return v, fmt.Errorf("team view: %w", err)
	default:
		v.Turn = &turn
		if v.Tasks, err = s.TurnTasks(ctx, turn.ID); err != nil {
			return v, err
		}
		if v.Progress, err = s.progress(ctx, v.Tasks); err != nil {
			return v, err
		}
	}
	if v.Dispatched, err = s.Dispatched(ctx, sessionID); err != nil {
		return v, err
	}
	rows, err := s.pool.Query(ctx, `SELECT id, session_id, coalesce(task_id, 0), kind, payload, created_at FROM (
		SELECT * FROM signals WHERE session_id = $1 ORDER BY id DESC LIMIT $2) s ORDER BY id`, sessionID, signals)
	if err != nil {
		return v, fmt.Errorf("team view: signals: %w", err)
	}
	v.Signals, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Signal, error) {
		var sg master.Signal
		err := r.Scan(&sg.ID, &sg.SessionID, &sg.TaskID, &sg.Kind, &sg.Payload, &sg.At)
		return sg, err
	})
	if err != nil {
		return v, fmt.Errorf("team view: signals: %w", err)
	}
	return v, nil
}

// ReplanSession replaces an active session's roster, cancelling queued
// tasks of the roles it drops, and queues notice for its thread.
func (s *Store) ReplanSession(ctx context.Context, sessionID int64, roster []master.Role, notice string, usage master.Usage) ([]string, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	defer tx.Rollback(ctx)
	var threadID string
	err = tx.QueryRow(ctx, `SELECT thread_id FROM sessions WHERE id = $1 AND state = 'active' FOR UPDATE`, sessionID).Scan(&threadID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("replan session %d: %w", sessionID, master.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	removed, err := replaceRoster(ctx, tx, sessionID, roster)
	if err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	if err := queueNotice(ctx, tx, sessionID, master.OutNotice, threadID, notice); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	if err := addUsage(ctx, tx, sessionID, usage); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	if err := notify(ctx, tx, sessionID); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	return removed, nil
}

// queueNotice queues a message that belongs to no turn. Its nonce comes
// from its own id, so it is unique and short.
func queueNotice(ctx context.Context, tx pgx.Tx, sessionID int64, kind master.OutKind, channelID, content string) error {
	content = master.CleanText(content)
	_, err := tx.Exec(ctx, `
		WITH next AS (SELECT nextval(pg_get_serial_sequence('outbox', 'id')) AS id)
		INSERT INTO outbox (id, session_id, kind, channel_id, content, nonce)
		OVERRIDING SYSTEM VALUE
		SELECT next.id, $1, $2, $3, $4, 'o' || next.id FROM next`, sessionID, kind, channelID, content)
	if err != nil {
		return fmt.Errorf("queue %s: %w", kind, err)
	}
	return nil
}

// SessionStats counts a session's turns and tasks.
func (s *Store) SessionStats(ctx context.Context, sessionID int64) (master.SessionStats, error) {
	st := master.SessionStats{TasksDone: map[string]int{}}
	if err := s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM turns WHERE session_id = $1),
		(SELECT count(*) FROM tasks WHERE session_id = $1)`, sessionID).Scan(&st.Turns, &st.Tasks); err != nil {
		return st, fmt.Errorf("session stats: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT role, count(*) FROM tasks WHERE session_id = $1 AND state = 'done' GROUP BY role`, sessionID)
	if err != nil {
		return st, fmt.Errorf("session stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var role string
		var n int
		if err := rows.Scan(&role, &n); err != nil {
			return st, fmt.Errorf("session stats: %w", err)
		}
		st.TasksDone[role] = n
	}
	return st, rows.Err()
}

// Dissolve ends an active session in one transaction: its queued and
// running tasks and its open turns are cancelled, the session is marked
// dissolved, and summary is queued for its thread. master.ErrNotFound
// when it is not active.
func (s *Store) Dissolve(ctx context.Context, sessionID int64, summary string, final *master.NewReport) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	defer tx.Rollback(ctx)
	var threadID string
	err = tx.QueryRow(ctx, `UPDATE sessions SET state = 'dissolved', ended_at = now(),
		master_owner = NULL, master_lease_until = NULL
		WHERE id = $1 AND state = 'active' RETURNING thread_id`, sessionID).Scan(&threadID)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("dissolve session %d: %w", sessionID, master.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	wake := []int64{sessionID}
	cancelled, err := cancelSessionTasks(ctx, tx, sessionID, "the team was dissolved")
	if err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	// Reports that reached this team but were never taken up are posted
	// in its thread as they are: nothing addressed to it is lost.
	rows, err := tx.Query(ctx, `SELECT content FROM turns WHERE session_id = $1 AND state = 'queued'
		AND report_id IS NOT NULL ORDER BY id`, sessionID)
	if err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	pending, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	var finalReport int64
	for _, content := range pending {
		for _, part := range master.Split(content, master.MaxMessageLen) {
			if err := queueNotice(ctx, tx, sessionID, master.OutReport, threadID, part); err != nil {
				return fmt.Errorf("dissolve: %w", err)
			}
		}
	}
	if final != nil {
		from, err := scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions s WHERE s.id = $1`, sessionID))
		if err != nil {
			return fmt.Errorf("dissolve: %w", err)
		}
		rep, err := s.deliverReport(ctx, tx, from, 0, *final)
		if err != nil {
			return fmt.Errorf("dissolve: final report: %w", err)
		}
		wake = append(wake, rep.ToSession)
		finalReport = rep.ID
	}
	if _, err := tx.Exec(ctx, `UPDATE turns SET state = 'cancelled', updated_at = now()
		WHERE session_id = $1 AND state IN ('queued', 'running', 'waiting')`, sessionID); err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	// A reply or question decided but not posted yet is not posted: the
	// team is gone. (One a sender is posting right now may still land.)
	if _, err := tx.Exec(ctx, `UPDATE outbox SET state = 'cancelled', lease_until = NULL, lease_owner = NULL,
		error = 'the team was dissolved'
		WHERE session_id = $1 AND state = 'pending' AND kind IN ('reply', 'question')`, sessionID); err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	if err := queueNotice(ctx, tx, sessionID, master.OutSummary, threadID, summary); err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	if err := s.enqueueWebhook(ctx, tx, sessionID, master.WebhookSessionDissolved, dissolvedData(summary, cancelled, finalReport)); err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	if err := notify(ctx, tx, wake...); err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	return nil
}
