package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// ReleaseTask puts a running task back in the queue at once, so another
// worker can take it without waiting for its lease to lapse (graceful
// shutdown). master.ErrStale when the task is no longer this attempt's.
func (s *Store) ReleaseTask(ctx context.Context, taskID int64, attempt int) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("release task: %w", err)
	}
	defer tx.Rollback(ctx)
	var sessionID int64
	err = tx.QueryRow(ctx, `
		UPDATE tasks SET state = 'queued', worker_id = NULL, lease_until = NULL, updated_at = now()
		WHERE id = $1 AND state = 'running' AND attempt = $2
		RETURNING session_id`, taskID, attempt).Scan(&sessionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("release task %d attempt %d: %w", taskID, attempt, master.ErrStale)
	}
	if err != nil {
		return fmt.Errorf("release task: %w", err)
	}
	if err := notify(ctx, tx, sessionID); err != nil {
		return fmt.Errorf("release task: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("release task: %w", err)
	}
	return nil
}

// Progress records a running task's PROGRESS signal. master.ErrStale when
// the task is no longer this attempt's.
func (s *Store) Progress(ctx context.Context, taskID int64, attempt int, percent int, note string) error {
	note = master.CleanText(note)
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("progress: %w", err)
	}
	defer tx.Rollback(ctx)
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

// TaskInput returns what the worker of t may see: the goal, its role and
// its dependencies with their results. master.ErrNotFound when the role
// has left the team.
func (s *Store) TaskInput(ctx context.Context, t master.Task) (master.TaskInput, error) {
	var in master.TaskInput
	if err := s.pool.QueryRow(ctx, `SELECT goal FROM sessions WHERE id = $1`, t.SessionID).Scan(&in.Goal); err != nil {
		return in, fmt.Errorf("task input: session: %w", err)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT name, description, prompt, model, temperature, max_tokens, timeout_ms
		FROM session_roles WHERE session_id = $1 AND name = $2`, t.SessionID, t.Role)
	if err != nil {
		return in, fmt.Errorf("task input: role: %w", err)
	}
	roles, err := pgx.CollectRows(rows, scanRole)
	if err != nil {
		return in, fmt.Errorf("task input: role: %w", err)
	}
	if len(roles) == 0 {
		return in, fmt.Errorf("task input: role %q is not on the team: %w", t.Role, master.ErrNotFound)
	}
	in.Role = roles[0]
	rows, err = s.pool.Query(ctx, `SELECT name, description FROM session_roles
		WHERE session_id = $1 AND name <> $2 ORDER BY position, name`, t.SessionID, t.Role)
	if err != nil {
		return in, fmt.Errorf("task input: team: %w", err)
	}
	if in.Team, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Role, error) {
		var role master.Role
		return role, r.Scan(&role.Name, &role.Description)
	}); err != nil {
		return in, fmt.Errorf("task input: team: %w", err)
	}
	if len(t.DependsOn) > 0 {
		rows, err := s.pool.Query(ctx, `SELECT `+taskColumns+` FROM tasks t WHERE t.id = ANY ($1) ORDER BY t.id`, t.DependsOn)
		if err != nil {
			return in, fmt.Errorf("task input: dependencies: %w", err)
		}
		if in.Deps, err = collectTasks(rows); err != nil {
			return in, fmt.Errorf("task input: dependencies: %w", err)
		}
	}
	return in, nil
}
