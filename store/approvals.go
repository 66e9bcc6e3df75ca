package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// approvalColumns is the select list scanApproval reads, from approvals
// a joined with sessions s and, left, outbox o.
const approvalColumns = `a.id, a.session_id, a.task_id, a.seq, a.role, a.tool, a.arguments, a.approvers, a.state,
	coalesce(a.decided_by, ''), a.decided_at, a.expires_at, s.thread_id, coalesce(o.discord_message_id, '')`

const approvalFrom = `approvals a JOIN sessions s ON s.id = a.session_id LEFT JOIN outbox o ON o.id = a.outbox_id`

func scanApproval(row pgx.Row) (master.Approval, error) {
	var a master.Approval
	var decided *time.Time
	err := row.Scan(&a.ID, &a.SessionID, &a.TaskID, &a.Seq, &a.Role, &a.Tool, &a.Args, &a.Approvers, &a.State,
		&a.DecidedBy, &decided, &a.ExpiresAt, &a.ChannelID, &a.MessageID)
	if errors.Is(err, pgx.ErrNoRows) {
		return a, master.ErrNotFound
	}
	a.DecidedAt = orZero(decided)
	return a, err
}

// Approval returns an approval request with its session;
// master.ErrNotFound when there is none.
func (s *Store) Approval(ctx context.Context, id int64) (master.Approval, master.Session, error) {
	a, err := approval(ctx, s.pool, id)
	if err != nil {
		return a, master.Session{}, err
	}
	sess, err := s.Session(ctx, a.SessionID)
	if err != nil {
		return a, sess, fmt.Errorf("approval: %w", err)
	}
	return a, sess, nil
}

func approval(ctx context.Context, q querier, id int64) (master.Approval, error) {
	a, err := scanApproval(q.QueryRow(ctx, `SELECT `+approvalColumns+` FROM `+approvalFrom+` WHERE a.id = $1`, id))
	if err != nil && !errors.Is(err, master.ErrNotFound) {
		err = fmt.Errorf("approval: %w", err)
	}
	return a, err
}

// DecideApproval records by's decision on a pending request, approve or
// deny, and queues its task again (with fresh attempts: waiting is not a
// failure), waking the session, in one transaction. A request past its
// expiry is recorded expired instead, whatever was clicked, in whichever
// process the click lands (the sweeper may not have run yet): a late
// click approves nothing. A request no longer pending is returned as it
// stands, unchanged.
func (s *Store) DecideApproval(ctx context.Context, id int64, approve bool, by string) (master.Approval, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return master.Approval{}, fmt.Errorf("decide approval: %w", err)
	}
	defer tx.Rollback(ctx)
	state := master.ApprovalDenied
	if approve {
		state = master.ApprovalApproved
	}
	var taskID, sessionID int64
	err = tx.QueryRow(ctx, `
		UPDATE approvals SET state = CASE WHEN expires_at <= now() THEN 'expired' ELSE $2 END,
		       decided_by = CASE WHEN expires_at <= now() THEN NULL ELSE $3 END, decided_at = now()
		WHERE id = $1 AND state = 'pending'
		RETURNING task_id, session_id`, id, state, cleanText(by)).Scan(&taskID, &sessionID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// Decided already (by someone else, or expired): as it stands.
	case err != nil:
		return master.Approval{}, fmt.Errorf("decide approval: %w", err)
	default:
		if _, err := resumePaused(ctx, tx, []int64{taskID}, s.attempts()); err != nil {
			return master.Approval{}, fmt.Errorf("decide approval: %w", err)
		}
		if err := notify(ctx, tx, WakeTasks+WakeApprovals, sessionID); err != nil {
			return master.Approval{}, fmt.Errorf("decide approval: %w", err)
		}
	}
	a, err := approval(ctx, tx, id)
	if err != nil {
		return a, fmt.Errorf("decide approval: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return master.Approval{}, fmt.Errorf("decide approval: %w", err)
	}
	return a, nil
}

// resumePaused queues again the tasks among ids that wait for an
// approval, with attempts fresh attempts (the count itself keeps rising,
// so a worker of an earlier attempt can never complete one). It returns
// their sessions.
func resumePaused(ctx context.Context, tx pgx.Tx, ids []int64, attempts int) ([]int64, error) {
	mark(tx, WakeTasks)
	rows, err := tx.Query(ctx, `
		UPDATE tasks SET state = 'queued', max_attempts = attempt + $2, updated_at = now()
		WHERE id = ANY ($1) AND state = 'approval'
		RETURNING session_id`, ids, attempts)
	if err != nil {
		return nil, fmt.Errorf("resume paused tasks: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// expireApprovals denies the requests nobody decided in time and queues
// their tasks again; it returns their sessions.
func expireApprovals(ctx context.Context, tx pgx.Tx, attempts int) ([]int64, error) {
	rows, err := tx.Query(ctx, `
		UPDATE approvals SET state = 'expired', decided_at = now()
		WHERE state = 'pending' AND expires_at < now()
		RETURNING task_id`)
	if err != nil {
		return nil, fmt.Errorf("expire approvals: %w", err)
	}
	tasks, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(tasks) == 0 {
		return nil, err
	}
	return resumePaused(ctx, tx, tasks, attempts)
}

// UnsettledApprovals lists up to limit requests of scope's sessions
// decided, expired or cancelled before before, whose posted message
// still shows its buttons, oldest first.
func (s *Store) UnsettledApprovals(ctx context.Context, scope master.Scope, before time.Time, limit int) ([]master.Approval, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+approvalColumns+` FROM `+approvalFrom+`
		WHERE a.state <> 'pending' AND a.settled_at IS NULL AND a.decided_at < $1 AND o.state = 'sent'
		  AND s.surface = $3 AND ($4 = '' OR s.attached_to = $4)
		ORDER BY a.id LIMIT $2`, before, limit, scope.Of(), scope.Attached)
	if err != nil {
		return nil, fmt.Errorf("unsettled approvals: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Approval, error) { return scanApproval(r) })
	if err != nil {
		return nil, fmt.Errorf("unsettled approvals: %w", err)
	}
	return list, nil
}

// SettleApproval records that a request's message shows its outcome.
func (s *Store) SettleApproval(ctx context.Context, id int64) error {
	if _, err := s.pool.Exec(ctx, `UPDATE approvals SET settled_at = now() WHERE id = $1 AND state <> 'pending'`, id); err != nil {
		return fmt.Errorf("settle approval: %w", err)
	}
	return nil
}
