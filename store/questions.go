package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// ResumeTask answers the question of a task of the guarded turn that
// ended need_info: the task is queued again, in the same round, and its
// worker sees the answer. Tasks that were cancelled because it stopped
// are queued again too.
func (s *Store) ResumeTask(ctx context.Context, g master.Guard, taskID int64, answer string) error {
	answer = cleanText(answer)
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("resume task: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := checkGuard(ctx, tx, g); err != nil {
		return fmt.Errorf("resume task: %w", err)
	}
	n, err := resumeTasks(ctx, tx, g.TurnID, []int64{taskID}, answer, s.attempts())
	if err != nil {
		return fmt.Errorf("resume task: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("resume task %d: it does not wait for an answer in this round: %w", taskID, master.ErrStale)
	}
	if err := notify(ctx, tx, WakeTasks, g.SessionID); err != nil {
		return fmt.Errorf("resume task: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("resume task: %w", err)
	}
	return nil
}

// resumeTasks answers need_info tasks of a turn's current round (all of
// them when ids is nil) and queues them again with their cancelled
// dependents. It returns how many it resumed.
func resumeTasks(ctx context.Context, tx pgx.Tx, turnID int64, ids []int64, answer string, attempts int) (int, error) {
	rows, err := tx.Query(ctx, `
		UPDATE tasks t
		SET state = 'queued', error = NULL, ended_at = NULL, updated_at = now(), worker_id = NULL,
		    qa = jsonb_set(t.qa, ARRAY[(jsonb_array_length(t.qa) - 1)::text, 'a'], to_jsonb($3::text)),
		    -- The answer earns the task fresh attempts; the count itself keeps
		    -- rising so a worker of an earlier attempt can never complete it.
		    max_attempts = t.attempt + $4
		FROM turns u
		WHERE u.id = $1 AND t.turn_id = u.id AND t.round = u.round AND t.state = 'need_info'
		  AND jsonb_array_length(t.qa) > 0 AND ($2::bigint[] IS NULL OR t.id = ANY ($2))
		RETURNING t.id`, turnID, ids, answer, attempts)
	if err != nil {
		return 0, err
	}
	resumed, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(resumed) == 0 {
		return 0, err
	}
	// Dependents cancelled because a resumed task stopped wait for it again…
	if _, err := tx.Exec(ctx, `
		WITH RECURSIVE revived (id) AS (
			SELECT t.id FROM tasks t, unnest($2::bigint[]) AS r(id)
			WHERE t.turn_id = $1 AND t.state = 'cancelled' AND r.id = ANY (t.depends_on)
			  AND t.error = 'dependency #' || r.id || ' ended need_info'
		  UNION
			SELECT t.id FROM revived v JOIN tasks t ON v.id = ANY (t.depends_on)
			WHERE t.turn_id = $1 AND t.state = 'cancelled' AND t.error = 'dependency #' || v.id || ' ended cancelled'
		)
		UPDATE tasks SET state = 'queued', error = NULL, ended_at = NULL, updated_at = now()
		WHERE id IN (SELECT id FROM revived)`, turnID, resumed); err != nil {
		return 0, fmt.Errorf("revive dependents: %w", err)
	}
	// …unless another of their dependencies has ended for good: those are
	// cancelled again, so the round can still end.
	rows, err = tx.Query(ctx, `SELECT id FROM tasks WHERE turn_id = $1
		AND state IN ('failed', 'blocked', 'need_info', 'cancelled', 'timeout')`, turnID)
	if err != nil {
		return 0, err
	}
	ended, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, err
	}
	if len(ended) > 0 {
		if _, err := cancelDependents(ctx, tx, ended); err != nil {
			return 0, err
		}
	}
	return len(resumed), nil
}

// answerWaitingTurn is RecordTurn's path for a message that answers the
// question of a turn whose workers wait for information: the waiting turn
// runs again with its tasks resumed, and the message is kept as a turn
// that is already done. It reports whether the message was such an answer.
func answerWaitingTurn(ctx context.Context, tx pgx.Tx, sessionID, turnID, sortKey int64, answer string, attempts int) (bool, error) {
	var waiting int64
	err := tx.QueryRow(ctx, `
		SELECT u.id FROM turns u
		WHERE u.session_id = $1 AND u.state = 'waiting' AND u.sort_key < $2
		  AND EXISTS (SELECT 1 FROM tasks t WHERE t.turn_id = u.id AND t.round = u.round AND t.state = 'need_info')
		  -- One turn runs at a time: while another is open (a message
		  -- recorded late, older than the question), this message is a
		  -- turn of its own, and the waiting turn is closed.
		  AND NOT EXISTS (SELECT 1 FROM turns o WHERE o.session_id = $1 AND o.state IN ('queued', 'running') AND o.id <> $3)
		ORDER BY u.sort_key DESC, u.id DESC LIMIT 1
		FOR UPDATE`, sessionID, sortKey, turnID).Scan(&waiting)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := resumeTasks(ctx, tx, waiting, nil, answer, attempts); err != nil {
		return false, err
	}
	mark(tx, WakeTasks)
	// The waiting turn runs again, so its status message shows it at work
	// until it settles once more.
	if _, err := tx.Exec(ctx, `UPDATE turns SET state = CASE WHEN id = $1 THEN 'running' ELSE 'done' END,
		status_settled_at = CASE WHEN id = $1 THEN NULL ELSE status_settled_at END,
		updated_at = now() WHERE id IN ($1, $2)`, waiting, turnID); err != nil {
		return false, err
	}
	return true, nil
}
