package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// Taking back what dead or late processes held (SweepExpired), and
// cancelling a turn's or a session's open tasks.

// SweepExpired takes back the work of processes that are gone: tasks
// whose lease expired, and every lease of a process that died (its
// liveness lock is free; see Liveness), without waiting for them to
// expire: its tasks, its masters and its outbox claims. Tasks are queued
// again for another attempt, or failed once they used max_attempts (and
// their dependents cancelled). Tasks paused for an approval hold no lease
// and are not swept; a request nobody decided in time expires here, and
// its task is queued again (counted in requeued). One wake covers every
// session touched. With nothing to take back, as mostly, it is one
// statement that only reads.
func (s *Store) SweepExpired(ctx context.Context) (requeued, failed int, err error) {
	// Expired holds are looked for at most every holdSweepEvery: then the
	// sweep runs whatever the probe would say.
	if time.Since(time.Unix(0, s.holdSweep.Load())) < holdSweepEvery {
		var work bool
		if err := s.pool.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM tasks WHERE state = 'running' AND lease_until < now())
			    OR EXISTS (SELECT 1 FROM approvals WHERE state = 'pending' AND expires_at < now())
			    OR EXISTS (SELECT 1 FROM processes WHERE lost_at IS NOT NULL OR pg_try_advisory_xact_lock($1, lock_key))`,
			processLockClass).Scan(&work); err != nil {
			return 0, 0, fmt.Errorf("sweep expired: %w", err)
		}
		if !work {
			return 0, 0, nil
		}
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("sweep expired: %w", err)
	}
	defer rollback(ctx, tx)
	dead, err := deadOwners(ctx, tx)
	if err != nil {
		return 0, 0, fmt.Errorf("sweep expired: %w", err)
	}
	requeued, failed, sessions, err := s.takeBack(ctx, tx, dead)
	if err != nil {
		return 0, 0, fmt.Errorf("sweep expired: %w", err)
	}
	// The holds of model calls whose process died are settled at once;
	// expired ones (a process alive but cut off) at most every minute.
	last := s.holdSweep.Load()
	holds := len(dead) > 0 || time.Since(time.Unix(0, last)) >= holdSweepEvery
	if holds {
		n, err := settleLost(ctx, tx, dead)
		if err != nil {
			return 0, 0, fmt.Errorf("sweep expired: %w", err)
		}
		if n > 0 {
			s.logger.Info("settled the holds of model calls lost, at their worst case", "holds", n)
		}
	}
	// A request for approval nobody decided in time counts as denied:
	// its task runs again and reads so.
	resumed, err := expireApprovals(ctx, tx, s.attempts())
	if err != nil {
		return 0, 0, fmt.Errorf("sweep expired: %w", err)
	}
	requeued += len(resumed)
	sessions = append(sessions, resumed...)
	if err := notify(ctx, tx, WakeEvery, sessions...); err != nil {
		return 0, 0, fmt.Errorf("sweep expired: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, 0, fmt.Errorf("sweep expired: %w", err)
	}
	if holds {
		s.holdSweep.CompareAndSwap(last, time.Now().UnixNano())
	}
	return requeued, failed, nil
}

// takeBack queues again (or fails) the tasks whose lease expired and
// those of the dead owners, frees the dead owners' master leases and
// outbox claims, and returns the sessions concerned, to wake.
func (s *Store) takeBack(ctx context.Context, tx pgx.Tx, dead []string) (requeued, failed int, sessions []int64, err error) {
	requeued, failed, sessions, err = sweepExpired(ctx, tx, dead)
	if err != nil {
		return 0, 0, nil, err
	}
	if len(dead) > 0 {
		taken, err := takeOver(ctx, tx, dead)
		if err != nil {
			return 0, 0, nil, err
		}
		sessions = append(sessions, taken...)
		s.logger.Info("took over the work of dead processes", "owners", dead, "sessions", len(taken), "tasks", requeued+failed)
	}
	return requeued, failed, sessions, nil
}

func sweepExpired(ctx context.Context, tx pgx.Tx, dead []string) (requeued, failed int, sessions []int64, err error) {
	// SKIP LOCKED: a task being heartbeated or completed right now is not
	// expired for long, and concurrent sweepers must not queue behind it.
	rows, err := tx.Query(ctx, `
		WITH expired AS (
			SELECT id FROM tasks
			WHERE state = 'running' AND (lease_until < now() OR worker_id = ANY ($1))
			ORDER BY id
			FOR UPDATE SKIP LOCKED
		), swept AS (
			UPDATE tasks t
			SET state = CASE WHEN t.attempt >= t.max_attempts THEN 'failed' ELSE 'queued' END,
			    worker_id = CASE WHEN t.attempt >= t.max_attempts THEN t.worker_id END,
			    error = CASE WHEN t.attempt >= t.max_attempts
			                 THEN 'lease expired after ' || t.attempt || ' attempts' ELSE t.error END,
			    ended_at = CASE WHEN t.attempt >= t.max_attempts THEN now() END,
			    lease_until = NULL, updated_at = now()
			FROM expired e
			WHERE t.id = e.id
			RETURNING t.id, t.session_id, t.state, t.error
		), signalled AS (
			INSERT INTO signals (session_id, task_id, kind, payload)
			SELECT s.session_id, s.id, 'TASK_COMPLETE', jsonb_build_object('state', s.state, 'error', s.error)
			FROM swept s
			WHERE s.state = 'failed'
		)
		SELECT id, session_id, state FROM swept`, dead)
	if err != nil {
		return 0, 0, nil, err
	}
	var failedIDs []int64
	for rows.Next() {
		var id, session int64
		var state master.TaskState
		if err := rows.Scan(&id, &session, &state); err != nil {
			rows.Close()
			return 0, 0, nil, err
		}
		sessions = append(sessions, session)
		if state == master.TaskFailed {
			failedIDs = append(failedIDs, id)
		} else {
			requeued++
		}
	}
	if err := rows.Err(); err != nil {
		return 0, 0, nil, err
	}
	if len(failedIDs) > 0 {
		if _, err := cancelDependents(ctx, tx, failedIDs); err != nil {
			return 0, 0, nil, err
		}
	}
	return requeued, len(failedIDs), sessions, nil
}

// cancelTurnTasks cancels a turn's open tasks within tx, with a
// TASK_COMPLETE signal each. It does not notify.
func cancelTurnTasks(ctx context.Context, tx pgx.Tx, turnID int64, reason string) (int, error) {
	return cancelOpenTasks(ctx, tx, "turn_id", turnID, reason)
}

// cancelSessionTasks cancels the session's open tasks within tx, with a
// TASK_COMPLETE signal each. It does not notify.
func cancelSessionTasks(ctx context.Context, tx pgx.Tx, sessionID int64, reason string) (int, error) {
	return cancelOpenTasks(ctx, tx, "session_id", sessionID, reason)
}

// cancelOpenTasks cancels the open tasks (queued, running, or waiting
// for an approval) whose column (a turn_id or a session_id) is id, with
// reason as their error; their pending approvals are cancelled too.
func cancelOpenTasks(ctx context.Context, tx pgx.Tx, column string, id int64, reason string) (int, error) {
	mark(tx, WakeTasks+WakeApprovals)
	var n int
	err := tx.QueryRow(ctx, `
		WITH cancelled AS (
			UPDATE tasks
			SET state = 'cancelled', error = nullif($2, ''), lease_until = NULL,
			    ended_at = now(), updated_at = now()
			WHERE `+column+` = $1 AND state IN ('queued', 'running', 'approval')
			RETURNING id, session_id, error
		), signalled AS (
			INSERT INTO signals (session_id, task_id, kind, payload)
			SELECT c.session_id, c.id, 'TASK_COMPLETE',
			       jsonb_strip_nulls(jsonb_build_object('state', 'cancelled', 'error', c.error))
			FROM cancelled c
		), unasked AS (
			UPDATE approvals a SET state = 'cancelled', decided_at = now()
			FROM cancelled c WHERE a.task_id = c.id AND a.state = 'pending'
		)
		SELECT count(*) FROM cancelled`, id, reason).Scan(&n)
	return n, err
}
