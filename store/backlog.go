package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// Backlog counts the open work of every process, in one read-only
// transaction. Each count reads a partial index (open turns, queued and
// running tasks, pending outbox rows and webhook events, active
// sessions), so it stays cheap however long the history grows.
func (s *Store) Backlog(ctx context.Context) (master.Backlog, error) {
	b := master.Backlog{
		Turns: map[master.TurnState]int{master.TurnQueued: 0, master.TurnRunning: 0, master.TurnWaiting: 0},
		Tasks: map[master.TaskState]int{master.TaskQueued: 0, master.TaskRunning: 0},
	}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var state string
		var n int
		rows, err := tx.Query(ctx, `SELECT state, count(*) FROM turns WHERE state IN ('queued', 'running', 'waiting') GROUP BY state`)
		if err != nil {
			return err
		}
		if _, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error { b.Turns[master.TurnState(state)] = n; return nil }); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT state, count(*) FROM tasks WHERE state IN ('queued', 'running') GROUP BY state`)
		if err != nil {
			return err
		}
		if _, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error { b.Tasks[master.TaskState(state)] = n; return nil }); err != nil {
			return err
		}
		// Claimable: the claim's own condition (see claimTasks), unlocked.
		var oldest float64
		err = tx.QueryRow(ctx, `
			SELECT
				(SELECT count(*) FROM tasks t JOIN sessions s ON s.id = t.session_id
				 WHERE t.state = 'queued' AND s.state = 'active'
				   AND NOT EXISTS (SELECT 1 FROM tasks d WHERE d.id = ANY (t.depends_on) AND d.state <> 'done')),
				(SELECT count(*) FROM outbox WHERE state = 'pending'),
				(SELECT coalesce(extract(epoch FROM now() - min(created_at))::float8, 0) FROM outbox WHERE state = 'pending'),
				(SELECT count(*) FROM webhook_events WHERE state = 'pending'),
				(SELECT count(*) FROM sessions WHERE state = 'active'),
				(SELECT count(*) FROM processes WHERE lost_at IS NULL)`).
			Scan(&b.ClaimableTasks, &b.OutboxPending, &oldest, &b.WebhookPending, &b.ActiveSessions, &b.Processes)
		b.OutboxOldest = time.Duration(max(oldest, 0) * float64(time.Second))
		return err
	})
	if err != nil {
		return master.Backlog{}, fmt.Errorf("backlog: %w", err)
	}
	return b, nil
}
