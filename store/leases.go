package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// cleanupTimeout bounds a rollback run after its context ended.
const cleanupTimeout = 5 * time.Second

// rollback ends tx if it was not committed, with a context that is never
// cancelled: pgx closes a connection whose rollback fails, and a
// cancelled context fails it, so a rollback under the caller's context
// would cost a new connection each time a caller gives up. Use it as
// `defer rollback(ctx, tx)`.
func rollback(ctx context.Context, tx pgx.Tx) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = tx.Rollback(rctx)
}

// refColumns splits refs into the arrays unnest takes.
func refColumns(refs []master.TaskRef) (ids []int64, attempts []int32) {
	ids, attempts = make([]int64, len(refs)), make([]int32, len(refs))
	for i, r := range refs {
		ids[i], attempts[i] = r.ID, int32(r.Attempt)
	}
	return ids, attempts
}

// ExtendLeases extends to now+lease the leases of the tasks of refs that
// are still running under their attempt, in one statement, and returns
// the ids of those that are not (cancelled, swept, claimed again): their
// workers must stop. A task whose row is locked right now (its outcome
// being written) is skipped, not waited for: it is still running in this
// statement's view, so it is not stale, and its lease is extended at the
// next call if it still needs one. Lease extensions never wait on a row
// and never take part in a deadlock.
//
// It is one statement in its own transaction, committed as durably as
// any other: a lost extension (a Postgres crash) would at worst let the
// sweeper queue the task again under a new attempt, and the old worker's
// writes would then be refused by their attempt; nothing else depends on
// it.
func (s *Store) ExtendLeases(ctx context.Context, refs []master.TaskRef, lease time.Duration) ([]int64, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	ids, attempts := refColumns(refs)
	rows, err := s.pool.Query(ctx, `
		WITH mine AS (
			SELECT * FROM unnest($1::bigint[], $2::int[]) AS m(id, attempt)
		), free AS (
			SELECT t.id FROM tasks t JOIN mine m ON m.id = t.id
			WHERE t.state = 'running' AND t.attempt = m.attempt
			ORDER BY t.id
			FOR UPDATE OF t SKIP LOCKED
		), extended AS (
			UPDATE tasks t SET lease_until = now() + $3 * interval '1 microsecond', updated_at = now()
			FROM free f WHERE t.id = f.id
		)
		SELECT m.id FROM mine m
		WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = m.id AND t.state = 'running' AND t.attempt = m.attempt)`,
		ids, attempts, lease.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("extend leases: %w", err)
	}
	stale, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("extend leases: %w", err)
	}
	return stale, nil
}

// StaleTasks returns the ids of the tasks of refs that are no longer
// running under their attempt. It only reads: it takes no lock, writes
// nothing, and never waits for a task's outcome being written. Workers
// call it when a wake says something may have changed.
func (s *Store) StaleTasks(ctx context.Context, refs []master.TaskRef) ([]int64, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	ids, attempts := refColumns(refs)
	rows, err := s.pool.Query(ctx, `
		SELECT m.id FROM unnest($1::bigint[], $2::int[]) AS m(id, attempt)
		WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = m.id AND t.state = 'running' AND t.attempt = m.attempt)`,
		ids, attempts)
	if err != nil {
		return nil, fmt.Errorf("stale tasks: %w", err)
	}
	stale, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("stale tasks: %w", err)
	}
	return stale, nil
}
