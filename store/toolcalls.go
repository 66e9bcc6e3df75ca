package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// Every write below acts for one attempt of a running task and returns
// master.ErrStale when the task is no longer running under it: another
// worker may have taken it over.

// ToolCalls returns every recorded call of a task's tools, in order,
// each with the decision a person was asked for on it, if any.
func (s *Store) ToolCalls(ctx context.Context, taskID int64) ([]master.CallRecord, error) {
	rows, err := s.pool.Query(ctx, toolCallsSQL, taskID)
	if err != nil {
		return nil, fmt.Errorf("tool calls: %w", err)
	}
	calls, err := collectCalls(rows)
	if err != nil {
		return nil, fmt.Errorf("tool calls: %w", err)
	}
	return calls, nil
}

// toolCallsSQL reads a task's ($1) recorded calls in order, for
// collectCalls.
const toolCallsSQL = `
	SELECT c.task_id, c.seq, c.step, c.call_id, c.name, c.arguments, c.state, coalesce(c.result, ''),
	       coalesce(c.is_error, false), coalesce(a.state, '')
	FROM tool_calls c LEFT JOIN approvals a ON a.task_id = c.task_id AND a.seq = c.seq
	WHERE c.task_id = $1
	ORDER BY c.seq`

func collectCalls(rows pgx.Rows) ([]master.CallRecord, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.CallRecord, error) {
		var c master.CallRecord
		err := r.Scan(&c.TaskID, &c.Seq, &c.Step, &c.CallID, &c.Name, &c.Args, &c.State, &c.Result, &c.IsError, &c.Approval)
		return c, err
	})
}

// runningTask locks a task running under attempt against changes of its
// state while tx lasts, and returns its session; master.ErrStale when it
// is not running under attempt.
func runningTask(ctx context.Context, tx pgx.Tx, taskID int64, attempt int) (int64, error) {
	var sessionID int64
	err := tx.QueryRow(ctx, `SELECT session_id FROM tasks WHERE id = $1 AND state = 'running' AND attempt = $2
		FOR SHARE`, taskID, attempt).Scan(&sessionID)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("task %d attempt %d: %w", taskID, attempt, master.ErrStale)
	}
	return sessionID, err
}

// PlanToolCalls records the calls of one model answer (step) before any
// is made, numbered after the task's earlier calls, and returns them.
func (s *Store) PlanToolCalls(ctx context.Context, taskID int64, attempt, step int, calls []master.PlannedCall) ([]master.CallRecord, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan tool calls: %w", err)
	}
	defer tx.Rollback(ctx)
	sessionID, err := runningTask(ctx, tx, taskID, attempt)
	if err != nil {
		return nil, fmt.Errorf("plan tool calls: %w", err)
	}
	var next int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(seq) + 1, 0) FROM tool_calls WHERE task_id = $1`, taskID).Scan(&next); err != nil {
		return nil, fmt.Errorf("plan tool calls: %w", err)
	}
	out := make([]master.CallRecord, len(calls))
	ids, names, args := make([]string, len(calls)), make([]string, len(calls)), make([]string, len(calls))
	for i, c := range calls {
		ids[i], names[i], args[i] = cleanText(c.CallID), cleanText(c.Name), cleanText(c.Args)
		out[i] = master.CallRecord{TaskID: taskID, Seq: next + i, Step: step, CallID: ids[i], Name: names[i], Args: args[i],
			State: master.CallPlanned}
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO tool_calls (task_id, session_id, seq, step, call_id, name, arguments, attempt)
		SELECT $1, $2, $3 + c.ord::int - 1, $4, c.call_id, c.name, c.arguments, $5
		FROM unnest($6::text[], $7::text[], $8::text[]) WITH ORDINALITY AS c(call_id, name, arguments, ord)`,
		taskID, sessionID, next, step, attempt, ids, names, args); err != nil {
		return nil, fmt.Errorf("plan tool calls: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("plan tool calls: %w", err)
	}
	return out, nil
}

// StartToolCall records that a planned call is about to be made: a task
// run again finds it started and does not make it again.
func (s *Store) StartToolCall(ctx context.Context, taskID int64, attempt, seq int) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("start tool call: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := runningTask(ctx, tx, taskID, attempt); err != nil {
		return fmt.Errorf("start tool call: %w", err)
	}
	tag, err := tx.Exec(ctx, `UPDATE tool_calls SET state = 'started', attempt = $3, started_at = now()
		WHERE task_id = $1 AND seq = $2 AND state = 'planned'`, taskID, seq, attempt)
	if err != nil {
		return fmt.Errorf("start tool call: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("start tool call %d of task %d: not planned: %w", seq, taskID, master.ErrStale)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("start tool call: %w", err)
	}
	return nil
}

// RecordToolCall records a call's result (made, refused, denied or
// interrupted), with its TOOL signal, in one transaction.
func (s *Store) RecordToolCall(ctx context.Context, taskID int64, attempt, seq int, res master.ToolResult) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("record tool call: %w", err)
	}
	defer tx.Rollback(ctx)
	sessionID, err := runningTask(ctx, tx, taskID, attempt)
	if err != nil {
		return fmt.Errorf("record tool call: %w", err)
	}
	var name, args string
	err = tx.QueryRow(ctx, `
		UPDATE tool_calls SET state = 'done', attempt = $3, result = $4, is_error = $5, duration_ms = $6, size = $7,
		       started_at = coalesce(started_at, now()), ended_at = now()
		WHERE task_id = $1 AND seq = $2 AND state <> 'done'
		RETURNING name, arguments`,
		taskID, seq, attempt, cleanText(res.Text), res.IsError, res.Duration.Milliseconds(), max(res.Size, 0)).Scan(&name, &args)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("record tool call %d of task %d: not open: %w", seq, taskID, master.ErrStale)
	}
	if err != nil {
		return fmt.Errorf("record tool call: %w", err)
	}
	payload := map[string]any{
		"tool": name, "args": master.ShortArgs(args, maxSignalArgs), "seq": seq, "ok": !res.IsError,
		"duration_ms": res.Duration.Milliseconds(), "size": max(res.Size, 0),
	}
	if res.IsError {
		payload["error"] = master.ShortArgs(res.Text, maxSignalArgs)
	}
	b, err := marshalJSON(payload)
	if err != nil {
		return fmt.Errorf("record tool call: %w", err)
	}
	if _, err := addSignal(ctx, tx, sessionID, taskID, master.SignalTool, b); err != nil {
		return fmt.Errorf("record tool call: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("record tool call: %w", err)
	}
	return nil
}

// maxSignalArgs bounds a call's arguments, or its error, in a signal.
const maxSignalArgs = 160

// activeCalls reads, for each task that is running or waits for an
// approval, the call it is making or waits to make.
func activeCalls(ctx context.Context, q querier, tasks []master.Task) (map[int64]master.ToolActivity, error) {
	out := map[int64]master.ToolActivity{}
	var open []int64
	for _, t := range tasks {
		if t.State == master.TaskRunning || t.State == master.TaskApproval {
			open = append(open, t.ID)
		}
	}
	if len(open) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `
		SELECT DISTINCT ON (c.task_id) c.task_id, c.name, c.arguments
		FROM tool_calls c
		LEFT JOIN approvals a ON a.task_id = c.task_id AND a.seq = c.seq
		WHERE c.task_id = ANY ($1) AND (c.state = 'started' OR a.state = 'pending')
		ORDER BY c.task_id, c.seq DESC`, open)
	if err != nil {
		return nil, fmt.Errorf("active calls: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var a master.ToolActivity
		if err := rows.Scan(&id, &a.Tool, &a.Args); err != nil {
			return nil, fmt.Errorf("active calls: %w", err)
		}
		a.Args = master.ShortArgs(a.Args, maxSignalArgs)
		out[id] = a
	}
	return out, rows.Err()
}

// PauseForApproval pauses a running task until a person decides on its
// call seq: the task waits in state approval (no lease: the sweeper
// leaves it alone, and its round waits for it; its model calls were
// charged as each returned), and, in the same transaction, the request is
// recorded (with the call's arguments in full and the roles of its
// approvers, if any) to expire after ask.Timeout, a NEED_APPROVAL signal
// is written, and the message ask carries, with the Approve and Deny
// buttons, is queued for the thread. A request already made for the call
// is not made again. It returns the request's id.
func (s *Store) PauseForApproval(ctx context.Context, taskID int64, attempt, seq int, ask master.ApprovalAsk) (int64, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("pause for approval: %w", err)
	}
	defer tx.Rollback(ctx)
	var sessionID int64
	var role string
	err = tx.QueryRow(ctx, `
		UPDATE tasks SET state = 'approval', worker_id = NULL, lease_until = NULL, updated_at = now()
		WHERE id = $1 AND state = 'running' AND attempt = $2
		RETURNING session_id, role`, taskID, attempt).Scan(&sessionID, &role)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("pause for approval: task %d attempt %d: %w", taskID, attempt, master.ErrStale)
	}
	if err != nil {
		return 0, fmt.Errorf("pause for approval: %w", err)
	}
	a := master.Approval{SessionID: sessionID, TaskID: taskID, Seq: seq, Role: role, State: master.ApprovalPending,
		Approvers: append([]string{}, ask.Approvers...)}
	if err := tx.QueryRow(ctx, `SELECT name, arguments FROM tool_calls WHERE task_id = $1 AND seq = $2 AND state = 'planned'`,
		taskID, seq).Scan(&a.Tool, &a.Args); err != nil {
		return 0, fmt.Errorf("pause for approval: call %d: %w", seq, err)
	}
	a.Args = cleanText(a.Args)
	err = tx.QueryRow(ctx, `
		INSERT INTO approvals (session_id, task_id, seq, role, tool, arguments, expires_at, approvers)
		VALUES ($1, $2, $3, $4, $5, $6, now() + $7 * interval '1 microsecond', $8)
		ON CONFLICT (task_id, seq) DO NOTHING
		RETURNING id, expires_at`, sessionID, taskID, seq, role, a.Tool, a.Args, ask.Timeout.Microseconds(), a.Approvers).Scan(&a.ID, &a.ExpiresAt)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		// Asked already (this call paused its task before): wait for
		// that request, unless it has been decided.
		var state master.ApprovalState
		if err := tx.QueryRow(ctx, `SELECT id, state FROM approvals WHERE task_id = $1 AND seq = $2`, taskID, seq).Scan(&a.ID, &state); err != nil {
			return 0, fmt.Errorf("pause for approval: %w", err)
		}
		if state != master.ApprovalPending {
			return 0, fmt.Errorf("pause for approval: call %d of task %d was already %s", seq, taskID, state)
		}
	case err != nil:
		return 0, fmt.Errorf("pause for approval: %w", err)
	default:
		if err := askApproval(ctx, tx, a, ask); err != nil {
			return 0, fmt.Errorf("pause for approval: %w", err)
		}
	}
	if err := notify(ctx, tx, WakeOutbox, sessionID); err != nil {
		return 0, fmt.Errorf("pause for approval: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("pause for approval: %w", err)
	}
	return a.ID, nil
}

// askApproval queues a new request's message, with its buttons (and the
// call's arguments as a file when they do not fit in it), for the
// session's thread, and writes its NEED_APPROVAL signal.
func askApproval(ctx context.Context, tx pgx.Tx, a master.Approval, ask master.ApprovalAsk) error {
	buttons, err := marshalJSON(master.ApprovalButtons(a.ID))
	if err != nil {
		return err
	}
	var fileName *string
	var file []byte
	if ask.File.Name != "" {
		name := cleanText(ask.File.Name)
		fileName, file = &name, ask.File.Data
	}
	var outboxID int64
	if err := tx.QueryRow(ctx, `
		INSERT INTO outbox (session_id, kind, channel_id, content, buttons, nonce, file_name, file_data)
		SELECT s.id, 'approval', s.thread_id, $2, $3, 'ap' || $4::bigint, $5, $6 FROM sessions s WHERE s.id = $1
		RETURNING id`, a.SessionID, cleanText(ask.Text), buttons, a.ID, fileName, file).Scan(&outboxID); err != nil {
		return fmt.Errorf("queue the request: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE approvals SET outbox_id = $2 WHERE id = $1`, a.ID, outboxID); err != nil {
		return err
	}
	payload, err := marshalJSON(map[string]any{"tool": a.Tool, "args": master.ShortArgs(a.Args, maxSignalArgs), "seq": a.Seq, "approval": a.ID})
	if err != nil {
		return err
	}
	_, err = addSignal(ctx, tx, a.SessionID, a.TaskID, master.SignalNeedApproval, payload)
	return err
}
