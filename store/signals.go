package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// maxSignals bounds one page of Signals.
const maxSignals = 1000

// Signals returns up to limit signals of a session with ids above afterID,
// oldest first: pass the last id seen to follow the bus. limit <= 0 means
// 100; it is capped at 1000.
func (s *Store) Signals(ctx context.Context, sessionID, afterID int64, limit int) ([]master.Signal, error) {
	if limit <= 0 {
		limit = 100
	}
	limit = min(limit, maxSignals)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("signals: %w", err)
	}
	defer rollback(ctx, tx)
	sigs, err := signals(ctx, tx, sessionID, afterID, limit)
	if err != nil {
		return nil, fmt.Errorf("signals: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("signals: %w", err)
	}
	return sigs, nil
}

func signals(ctx context.Context, tx pgx.Tx, sessionID, afterID int64, limit int) ([]master.Signal, error) {
	rows, err := tx.Query(ctx, `
		SELECT id, session_id, coalesce(task_id, 0), kind, payload, created_at
		FROM signals
		WHERE session_id = $1 AND id > $2
		ORDER BY id
		LIMIT $3`, sessionID, afterID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Signal, error) {
		var sg master.Signal
		var payload []byte
		err := r.Scan(&sg.ID, &sg.SessionID, &sg.TaskID, &sg.Kind, &payload, &sg.At)
		sg.Payload = payload
		return sg, err
	})
}

// addSignal appends one signal within tx. payload must be a JSON object;
// nil means {}.
func addSignal(ctx context.Context, tx pgx.Tx, sessionID, taskID int64, kind master.SignalKind, payload []byte) (int64, error) {
	if payload == nil {
		payload = []byte("{}")
	}
	payload = cleanJSON(payload)
	var id int64
	err := tx.QueryRow(ctx, `
		INSERT INTO signals (session_id, task_id, kind, payload)
		VALUES ($1, nullif($2, 0), $3, $4)
		RETURNING id`, sessionID, taskID, kind, payload).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("add signal: %w", err)
	}
	return id, nil
}

// Progress records a running task's PROGRESS signal. master.ErrStale when
// the task is no longer this attempt's.
func (s *Store) Progress(ctx context.Context, taskID int64, attempt int, percent int, note string) error {
	note = cleanText(note)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	defer rollback(ctx, tx)
	var sessionID int64
	err = tx.QueryRow(ctx, `SELECT session_id FROM tasks WHERE id = $1 AND state = 'running' AND attempt = $2
		FOR SHARE`, taskID, attempt).Scan(&sessionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("progress of task %d attempt %d: %w", taskID, attempt, master.ErrStale)
	}
	if err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	payload, err := marshalJSON(struct {
		Percent int    `json:"percent"`
		Note    string `json:"note"`
	}{min(max(percent, 0), 100), note})
	if err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	if _, err := addSignal(ctx, tx, sessionID, taskID, master.SignalProgress, payload); err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	return nil
}
