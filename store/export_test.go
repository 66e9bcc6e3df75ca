package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/callonbot/callon/master"
)

// Pool exposes the store's pool to tests, for fixtures and assertions
// below the API.
func Pool(s *Store) *pgxpool.Pool { return s.pool }

// SetListenerTimings shortens a listener's waits for tests.
func SetListenerTimings(l *Listener, idleCheck, minBackoff, maxBackoff time.Duration) {
	l.idleCheck, l.conn.minBackoff, l.conn.maxBackoff = idleCheck, minBackoff, maxBackoff
}

// Deliver hands a wake to a listener's subscribers as a notification would.
func Deliver(l *Listener, payload string) { l.deliver(payload) }

// SetLivenessTimings shortens a liveness's waits for tests.
func SetLivenessTimings(l *Liveness, backoff time.Duration) {
	l.conn.minBackoff, l.conn.maxBackoff = backoff, backoff
}

// AddSignal appends a signal to a session's bus (a worker's PROGRESS, a
// HANDOFF, a WEBHOOK…) and wakes the session. sig.ID and sig.At are
// ignored; a zero TaskID means the signal is about the session; a nil
// Payload means {}. It returns the new signal's id.
func (s *Store) AddSignal(ctx context.Context, sig master.Signal) (int64, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("add signal: %w", err)
	}
	defer tx.Rollback(ctx)
	id, err := addSignal(ctx, tx, sig.SessionID, sig.TaskID, sig.Kind, sig.Payload)
	if err != nil {
		return 0, err
	}
	if err := notify(ctx, tx, WakeEvery, sig.SessionID); err != nil {
		return 0, fmt.Errorf("add signal: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("add signal: %w", err)
	}
	return id, nil
}

// CancelSessionTasks cancels every queued and running task of a session
// with reason as their error, and returns how many it cancelled. A worker
// still running one finds its completion stale.
func (s *Store) CancelSessionTasks(ctx context.Context, sessionID int64, reason string) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("cancel session tasks: %w", err)
	}
	defer tx.Rollback(ctx)
	n, err := cancelSessionTasks(ctx, tx, sessionID, reason)
	if err != nil {
		return 0, fmt.Errorf("cancel session tasks: %w", err)
	}
	if n > 0 {
		if err := notify(ctx, tx, WakeTasks, sessionID); err != nil {
			return 0, fmt.Errorf("cancel session tasks: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("cancel session tasks: %w", err)
	}
	return n, nil
}

// EnqueueTasks queues tasks for round of a turn and returns their ids in
// the order given. DependsOn indexes into tasks and may only point to an
// earlier task, which rules out cycles. One wake is sent for the session.
func (s *Store) EnqueueTasks(ctx context.Context, sessionID, turnID int64, round int, tasks []master.NewTask) ([]int64, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("enqueue tasks: %w", err)
	}
	defer tx.Rollback(ctx)
	ids, err := enqueueTasks(ctx, tx, sessionID, turnID, round, tasks, s.attempts())
	if err != nil {
		return nil, fmt.Errorf("enqueue tasks: %w", err)
	}
	if err := notify(ctx, tx, WakeTasks, sessionID); err != nil {
		return nil, fmt.Errorf("enqueue tasks: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("enqueue tasks: %w", err)
	}
	return ids, nil
}

// Notify sends payload on WakeChannel: a session id, or WakeAll.
func (s *Store) Notify(ctx context.Context, payload string) error {
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, WakeChannel, payload); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// RoundOpen returns how many tasks of a turn's round are still queued or
// running: the round is complete (fan-in) when it is 0.
func (s *Store) RoundOpen(ctx context.Context, turnID int64, round int) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("round open: %w", err)
	}
	defer tx.Rollback(ctx)
	n, err := roundOpen(ctx, tx, turnID, round)
	if err != nil {
		return 0, fmt.Errorf("round open: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("round open: %w", err)
	}
	return n, nil
}

// Task returns one task, or master.ErrNotFound.
func (s *Store) Task(ctx context.Context, id int64) (master.Task, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return master.Task{}, fmt.Errorf("task %d: %w", id, err)
	}
	defer tx.Rollback(ctx)
	t, err := scanTask(tx.QueryRow(ctx, `SELECT `+taskColumns+` FROM tasks t WHERE t.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return master.Task{}, fmt.Errorf("task %d: %w", id, master.ErrNotFound)
	}
	if err != nil {
		return master.Task{}, fmt.Errorf("task %d: %w", id, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return master.Task{}, fmt.Errorf("task %d: %w", id, err)
	}
	return t, nil
}

// Redact scrubs err as Open does for a connection string.
func Redact(err error, connString string) error {
	cfg, perr := pgx.ParseConfig(connString)
	if perr != nil {
		return perr
	}
	return redact(err, secretsOf(connString, &cfg.Config))
}

// NotifyCommitted wakes sessionID from a transaction of the store's own,
// which commits, or rolls back when rollback is set.
func (s *Store) NotifyCommitted(ctx context.Context, sessionID int64, rollback bool) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if err := notify(ctx, tx, WakeEvery, sessionID); err != nil {
		return err
	}
	if rollback {
		return tx.Rollback(ctx)
	}
	return tx.Commit(ctx)
}

// ForgetHoldSweep makes the next SweepExpired look for expired holds.
func ForgetHoldSweep(s *Store) { s.holdSweep.Store(0) }

// HoldTogether grants or refuses holds as one group write would, and
// SettleTogether settles as one.
func HoldTogether(s *Store, ctx context.Context, hs []master.Hold) ([]master.Held, []error) {
	rs := s.holdTogether(ctx, hs)
	held, errs := make([]master.Held, len(rs)), make([]error, len(rs))
	for i, r := range rs {
		held[i], errs[i] = r.held, r.err
	}
	return held, errs
}

// SettleTogether settles holds with their usage in one statement.
func SettleTogether(s *Store, ctx context.Context, ids []int64, us []master.Usage) []error {
	ss := make([]settlement, len(ids))
	for i, id := range ids {
		ss[i] = settlement{ID: id, P: us[i].PromptTokens, C: us[i].CompletionTokens, Model: us[i].Model}
	}
	return s.settleTogether(ctx, ss)
}
