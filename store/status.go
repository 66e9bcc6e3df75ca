package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// ActiveTurns lists the turns of scope's sessions the presenter shows:
// running ones, and ended ones whose status message is not settled yet,
// with their tasks, each running task's latest progress and the tool
// call it is making (or waits to make), and when the reply went out.
func (s *Store) ActiveTurns(ctx context.Context, scope master.Scope) ([]master.TurnStatus, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+turnColumns+`, s.thread_id,
		       (SELECT o.sent_at FROM outbox o WHERE o.turn_id = u.id AND o.part = 0
		          AND o.kind IN ('reply', 'question') ORDER BY o.id DESC LIMIT 1)
		FROM turns u JOIN sessions s ON s.id = u.session_id
		WHERE (u.state = 'running' OR (u.status_message_id IS NOT NULL AND u.status_settled_at IS NULL))
		  AND s.surface = $1 AND ($2 = '' OR s.attached_to = $2)
		ORDER BY u.id
		LIMIT 500`, scope.Of(), scope.Attached)
	if err != nil {
		return nil, fmt.Errorf("active turns: %w", err)
	}
	turns, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.TurnStatus, error) {
		var ts master.TurnStatus
		var replied *time.Time
		var err error
		ts.Turn, err = scanTurn(r, &ts.ThreadID, &replied)
		ts.StartedAt = ts.Turn.CreatedAt
		ts.RepliedAt = orZero(replied)
		return ts, err
	})
	if err != nil || len(turns) == 0 {
		if err != nil {
			err = fmt.Errorf("active turns: %w", err)
		}
		return nil, err
	}
	ids := make([]int64, len(turns))
	index := make(map[int64]int, len(turns))
	for i, ts := range turns {
		ids[i], index[ts.Turn.ID] = ts.Turn.ID, i
		turns[i].Progress = map[int64]master.Progress{}
	}
	rows, err = s.pool.Query(ctx, `SELECT `+taskColumns+` FROM tasks t WHERE t.turn_id = ANY ($1) ORDER BY t.id`, ids)
	if err != nil {
		return nil, fmt.Errorf("active turns: tasks: %w", err)
	}
	tasks, err := collectTasks(rows)
	if err != nil {
		return nil, fmt.Errorf("active turns: tasks: %w", err)
	}
	var all []master.Task
	for _, t := range tasks {
		turns[index[t.TurnID]].Tasks = append(turns[index[t.TurnID]].Tasks, t)
		all = append(all, t)
	}
	latest, err := progress(ctx, s.pool, all)
	if err != nil {
		return nil, fmt.Errorf("active turns: %w", err)
	}
	if err := s.settlingSpend(ctx, turns); err != nil {
		return nil, fmt.Errorf("active turns: %w", err)
	}
	calls, err := activeCalls(ctx, s.pool, all)
	if err != nil {
		return nil, fmt.Errorf("active turns: %w", err)
	}
	for _, t := range all {
		if p, ok := latest[t.ID]; ok {
			turns[index[t.TurnID]].Progress[t.ID] = p
		}
		if c, ok := calls[t.ID]; ok {
			if turns[index[t.TurnID]].Calls == nil {
				turns[index[t.TurnID]].Calls = map[int64]master.ToolActivity{}
			}
			turns[index[t.TurnID]].Calls[t.ID] = c
		}
	}
	return turns, nil
}

// settlingSpend reads the usage by model of the sessions of the turns
// whose status message is about to settle, which shows it.
func (s *Store) settlingSpend(ctx context.Context, turns []master.TurnStatus) error {
	var ids []int64
	for _, ts := range turns {
		if ts.Turn.State != master.TurnRunning && ts.Turn.StatusMessageID != "" {
			ids = append(ids, ts.Turn.SessionID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := s.pool.Query(ctx, `SELECT session_id, model, prompt_tokens, completion_tokens FROM session_usage
		WHERE session_id = ANY ($1) ORDER BY session_id, model`, ids)
	if err != nil {
		return fmt.Errorf("spend: %w", err)
	}
	bySession := map[int64][]master.Usage{}
	var sessionID int64
	var u master.Usage
	_, err = pgx.ForEachRow(rows, []any{&sessionID, &u.Model, &u.PromptTokens, &u.CompletionTokens}, func() error {
		bySession[sessionID] = append(bySession[sessionID], u)
		return nil
	})
	if err != nil {
		return fmt.Errorf("spend: %w", err)
	}
	for i := range turns {
		turns[i].Spent = bySession[turns[i].Turn.SessionID]
	}
	return nil
}

// SetStatusMessage records a turn's status message, once.
func (s *Store) SetStatusMessage(ctx context.Context, turnID int64, messageID string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE turns SET status_message_id = $2
		WHERE id = $1 AND status_message_id IS NULL`, turnID, messageID); err != nil {
		return fmt.Errorf("set status message: %w", err)
	}
	return nil
}

// SettleStatus records that a turn's status message shows its end.
func (s *Store) SettleStatus(ctx context.Context, turnID int64) error {
	if _, err := s.pool.Exec(ctx, `UPDATE turns SET status_settled_at = now() WHERE id = $1`, turnID); err != nil {
		return fmt.Errorf("settle status: %w", err)
	}
	return nil
}

// progress reads the latest PROGRESS signal of each running task.
func progress(ctx context.Context, q querier, tasks []master.Task) (map[int64]master.Progress, error) {
	out := map[int64]master.Progress{}
	var running []int64
	for _, t := range tasks {
		if t.State == master.TaskRunning {
			running = append(running, t.ID)
		}
	}
	if len(running) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `
		SELECT DISTINCT ON (task_id) task_id, payload FROM signals
		WHERE task_id = ANY ($1) AND kind = 'PROGRESS'
		ORDER BY task_id, id DESC`, running)
	if err != nil {
		return nil, fmt.Errorf("progress: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var taskID int64
		var payload []byte
		if err := rows.Scan(&taskID, &payload); err != nil {
			return nil, fmt.Errorf("progress: %w", err)
		}
		var p master.Progress
		if json.Unmarshal(payload, &p) == nil {
			out[taskID] = p
		}
	}
	return out, rows.Err()
}
