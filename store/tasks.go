package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// taskColumns is the select list scanTask reads.
const taskColumns = `t.id, t.session_id, t.turn_id, t.round, t.role, t.instruction, t.depends_on,
	t.state, t.attempt, coalesce(t.worker_id, ''), t.lease_until, coalesce(t.result, ''),
	coalesce(t.error, ''), t.qa, t.prompt_tokens, t.completion_tokens, t.created_at, t.started_at, t.ended_at,
	t.attachment_ids`

// scanTask reads one row of taskColumns; NULL times become zero times.
func scanTask(row pgx.Row, extra ...any) (master.Task, error) {
	var t master.Task
	var lease, started, ended *time.Time
	var qa []byte
	err := row.Scan(append([]any{&t.ID, &t.SessionID, &t.TurnID, &t.Round, &t.Role, &t.Instruction, &t.DependsOn,
		&t.State, &t.Attempt, &t.WorkerID, &lease, &t.Result,
		&t.Error, &qa, &t.Usage.PromptTokens, &t.Usage.CompletionTokens, &t.CreatedAt, &started, &ended,
		&t.Attachments}, extra...)...)
	if err != nil {
		return master.Task{}, err
	}
	if err := json.Unmarshal(qa, &t.QA); err != nil {
		return master.Task{}, fmt.Errorf("task %d questions: %w", t.ID, err)
	}
	t.LeaseUntil, t.StartedAt, t.EndedAt = orZero(lease), orZero(started), orZero(ended)
	if t.DependsOn == nil {
		t.DependsOn = []int64{}
	}
	if len(t.Attachments) == 0 {
		t.Attachments = nil
	}
	return t, nil
}

// orZero maps a NULL time to the zero time.
func orZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}

// collectTasks reads every row of rows with scanTask.
func collectTasks(rows pgx.Rows) ([]master.Task, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Task, error) { return scanTask(r) })
}

// enqueueTasks inserts tasks within tx, in one statement, and returns
// their ids in order. It does not notify: the caller sends one wake for
// its whole transaction (notify(ctx, tx, WakeTasks, sessionID)) before committing.
func enqueueTasks(ctx context.Context, tx pgx.Tx, sessionID, turnID int64, round int, tasks []master.NewTask, attempts int) ([]int64, error) {
	mark(tx, WakeTasks)
	input, err := batchJSON(tasks)
	if err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `WITH `+enqueueCTEs("", "$1", "$2", "$3", "$4", "$5")+`
		SELECT id FROM input ORDER BY ord`, input, sessionID, turnID, round, attempts)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	if len(ids) != len(tasks) {
		return nil, fmt.Errorf("inserted %d tasks, want %d", len(ids), len(tasks))
	}
	return ids, nil
}

// enqueueCTEs are the CTEs input (the batch, its ids drawn from the
// identity sequence first, in batch order, so that depends_on indexes can
// become ids within the same statement) and inserted (the tasks), for the
// batch in the jsonb parameter batch, of session, turn and round, each
// with attempts. guard, when not "", is a CTE the tasks are inserted only
// with (a turn's guard): no row of it, no task.
func enqueueCTEs(guard, batch, session, turn, round, attempts string) string {
	from := "input i"
	if guard != "" {
		from = "input i, " + guard
	}
	return `input AS MATERIALIZED (
			SELECT b.ord, b.role, b.instruction, b.deps, b.atts, b.notes,
			       nextval(pg_get_serial_sequence('tasks', 'id')) AS id
			FROM (
				SELECT * FROM jsonb_to_recordset(` + batch + `::jsonb)
					AS r(ord int, role text, instruction text, deps int[], atts bigint[], notes bigint[])
				ORDER BY ord
			) b
		), inserted AS (
			INSERT INTO tasks (id, session_id, turn_id, round, role, instruction, depends_on, max_attempts, attachment_ids, note_ids)
			OVERRIDING SYSTEM VALUE
			SELECT i.id, ` + session + `, ` + turn + `, ` + round + `, i.role, i.instruction,
			       coalesce((SELECT array_agg(d.id ORDER BY d.ord) FROM input d WHERE d.ord = ANY (i.deps)), '{}'), ` + attempts + `,
			       -- only files of this turn
			       coalesce((SELECT array_agg(a.id ORDER BY a.position) FROM attachments a
			                 WHERE a.turn_id = ` + turn + ` AND a.id = ANY (i.atts)), '{}'),
			       coalesce(i.notes, '{}')
			FROM ` + from + `
		)`
}

// batchJSON validates a batch and encodes it for jsonb_to_recordset.
func batchJSON(tasks []master.NewTask) ([]byte, error) {
	if len(tasks) == 0 {
		return nil, errors.New("no tasks")
	}
	type row struct {
		Ord         int     `json:"ord"`
		Role        string  `json:"role"`
		Instruction string  `json:"instruction"`
		Deps        []int   `json:"deps"`
		Atts        []int64 `json:"atts"`
		Notes       []int64 `json:"notes,omitempty"`
	}
	batch := make([]row, len(tasks))
	for i, t := range tasks {
		if !master.ValidRoleName(t.Role) {
			return nil, fmt.Errorf("task %d: role %q is not a slug (a-z, 0-9, - or _, starting with a letter)", i, t.Role)
		}
		if strings.TrimSpace(t.Instruction) == "" {
			return nil, fmt.Errorf("task %d: empty instruction", i)
		}
		deps := []int{}
		seen := map[int]bool{}
		for _, d := range t.DependsOn {
			switch {
			case d == i:
				return nil, fmt.Errorf("task %d depends on itself", i)
			case d < 0 || d >= len(tasks):
				return nil, fmt.Errorf("task %d depends on task %d: out of range 0..%d", i, d, len(tasks)-1)
			case d > i:
				return nil, fmt.Errorf("task %d depends on later task %d: a task may only depend on earlier ones", i, d)
			case !seen[d]:
				seen[d] = true
				deps = append(deps, d)
			}
		}
		batch[i] = row{Ord: i, Role: t.Role, Instruction: cleanText(t.Instruction), Deps: deps, Atts: t.Attachments, Notes: t.Notes}
	}
	return marshalJSON(batch)
}

// ClaimTasks leases up to n claimable tasks to workerID for lease, oldest
// first: queued, in an active session of scope, every dependency done. Claimers
// skip each other's rows, so concurrent claims never share a task. Each
// claimed task gets an ACK signal.
func (s *Store) ClaimTasks(ctx context.Context, scope master.Scope, workerID string, n int, lease time.Duration) ([]master.Task, error) {
	if n <= 0 || lease <= 0 || workerID == "" {
		return nil, fmt.Errorf("claim tasks: need a worker id, n > 0 and lease > 0 (got %q, %d, %s)", workerID, n, lease)
	}
	// One statement, committed on its own (durably: a claim lost in a
	// crash would let its attempt number be issued twice).
	tasks, err := claimTasks(ctx, s.pool, scope, workerID, n, lease)
	if err != nil {
		return nil, fmt.Errorf("claim tasks: %w", err)
	}
	return tasks, nil
}

func claimTasks(ctx context.Context, tx querier, scope master.Scope, workerID string, n int, lease time.Duration) ([]master.Task, error) {
	rows, err := tx.Query(ctx, `
		WITH picked AS (
			-- Walks the claimable index in id order and stops at the limit:
			-- the session and dependency checks are per-row subplans, not
			-- joins the planner could turn into a sort of every queued task.
			SELECT t.id
			FROM tasks t
			WHERE t.state = 'queued'
			  AND (SELECT s.state = 'active' AND s.surface = $4 AND ($5 = '' OR s.attached_to = $5)
			       FROM sessions s WHERE s.id = t.session_id)
			  AND (t.depends_on = '{}' OR NOT EXISTS (
				SELECT 1 FROM tasks d WHERE d.id = ANY (t.depends_on) AND d.state <> 'done'))
			ORDER BY t.id
			LIMIT $2
			FOR UPDATE OF t SKIP LOCKED
		), claimed AS (
			UPDATE tasks t
			SET state = 'running', worker_id = $1, attempt = t.attempt + 1,
			    lease_until = now() + $3 * interval '1 microsecond',
			    started_at = coalesce(t.started_at, now()), updated_at = now()
			FROM picked
			WHERE t.id = picked.id
			RETURNING t.*
		), acks AS (
			INSERT INTO signals (session_id, task_id, kind, payload)
			SELECT c.session_id, c.id, 'ACK', jsonb_build_object('worker', c.worker_id, 'attempt', c.attempt)
			FROM claimed c
		)
		-- A first attempt that needs no file gets its input with the
		-- claim (as TaskInput reads it), the results of the tasks it
		-- builds on included.
		SELECT `+taskColumns+`, i.input
		FROM claimed t LEFT JOIN LATERAL (
			SELECT json_build_object('role', row_to_json(r), 'goal', s.goal, 'guild_id', s.guild_id,
			       'notes', `+taskNotesSQL("t.note_ids")+`,
			       'team', coalesce((SELECT json_agg(json_build_array(o.name, o.description) ORDER BY o.position, o.name)
			                         FROM session_roles o WHERE o.session_id = s.id AND o.name <> t.role), '[]'),
			       'deps', (SELECT json_agg(json_build_object('id', d.id, 'role', d.role, 'state', d.state,
			                       'result', coalesce(d.result, ''), 'error', coalesce(d.error, '')) ORDER BY d.id)
			                FROM tasks d WHERE d.id = ANY (t.depends_on))) AS input
			FROM sessions s JOIN session_roles r ON r.session_id = s.id AND r.name = t.role
			WHERE s.id = t.session_id AND t.attempt = 1 AND t.attachment_ids = '{}'
		) i ON true
		ORDER BY t.id`,
		workerID, n, lease.Microseconds(), scope.Of(), scope.Attached)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Task, error) {
		var input []byte
		t, err := scanTask(r, &input)
		if err != nil || input == nil {
			return t, err
		}
		t.Input, err = claimedInput(input)
		return t, err
	})
}

// claimedInput decodes the input a claim read for a task.
func claimedInput(data []byte) (*master.TaskInput, error) {
	var v struct {
		Role struct {
			Name        string   `json:"name"`
			Description string   `json:"description"`
			Prompt      string   `json:"prompt"`
			Model       string   `json:"model"`
			Temperature *float32 `json:"temperature"`
			MaxTokens   *int     `json:"max_tokens"`
			TimeoutMS   *int64   `json:"timeout_ms"`
			Tools       []string `json:"tools"`
		} `json:"role"`
		Goal    string          `json:"goal"`
		GuildID string          `json:"guild_id"`
		Notes   json.RawMessage `json:"notes"`
		Team    [][2]string     `json:"team"`
		Deps    []struct {
			ID     int64            `json:"id"`
			Role   string           `json:"role"`
			State  master.TaskState `json:"state"`
			Result string           `json:"result"`
			Error  string           `json:"error"`
		} `json:"deps"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("task input: %w", err)
	}
	in := &master.TaskInput{Goal: v.Goal, GuildID: v.GuildID}
	if err := scanNotes(v.Notes, &in.Notes); err != nil {
		return nil, fmt.Errorf("task input: %w", err)
	}
	r := v.Role
	in.Role = master.Role{Name: r.Name, Description: r.Description, Prompt: r.Prompt, Model: r.Model, Temperature: r.Temperature, Tools: r.Tools}
	if len(in.Role.Tools) == 0 {
		in.Role.Tools = nil
	}
	if r.MaxTokens != nil {
		in.Role.MaxTokens = *r.MaxTokens
	}
	if r.TimeoutMS != nil {
		in.Role.Timeout = time.Duration(*r.TimeoutMS) * time.Millisecond
	}
	for _, m := range v.Team {
		in.Team = append(in.Team, master.Role{Name: m[0], Description: m[1]})
	}
	for _, d := range v.Deps {
		in.Deps = append(in.Deps, master.Task{ID: d.ID, Role: d.Role, State: d.State, Result: d.Result, Error: d.Error})
	}
	return in, nil
}

// Heartbeat extends the lease of a running task to now+lease. It returns
// master.ErrStale if the task is no longer running under attempt.
func (s *Store) Heartbeat(ctx context.Context, taskID int64, attempt int, lease time.Duration) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	defer rollback(ctx, tx)
	tag, err := tx.Exec(ctx, `
		UPDATE tasks SET lease_until = now() + $3 * interval '1 microsecond', updated_at = now()
		WHERE id = $1 AND state = 'running' AND attempt = $2`,
		taskID, attempt, lease.Microseconds())
	if err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("heartbeat task %d attempt %d: %w", taskID, attempt, master.ErrStale)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

func roundOpen(ctx context.Context, tx pgx.Tx, turnID int64, round int) (int, error) {
	var n int
	err := tx.QueryRow(ctx, `
		SELECT count(*) FROM tasks
		WHERE turn_id = $1 AND round = $2 AND state IN ('queued', 'running', 'approval')`, turnID, round).Scan(&n)
	return n, err
}

// TurnTasks returns every task of a turn, by round then id.
func (s *Store) TurnTasks(ctx context.Context, turnID int64) ([]master.Task, error) {
	tasks, err := turnTasks(ctx, s.pool, turnID)
	if err != nil {
		return nil, fmt.Errorf("turn tasks: %w", err)
	}
	return tasks, nil
}

func turnTasks(ctx context.Context, q querier, turnID int64) ([]master.Task, error) {
	rows, err := q.Query(ctx, `SELECT `+taskColumns+` FROM tasks t WHERE t.turn_id = $1 ORDER BY t.round, t.id`, turnID)
	if err != nil {
		return nil, err
	}
	return collectTasks(rows)
}

// ReleaseTask puts a running task back in the queue at once, so another
// worker can take it without waiting for its lease to lapse (graceful
// shutdown). master.ErrStale when the task is no longer this attempt's.
func (s *Store) ReleaseTask(ctx context.Context, taskID int64, attempt int) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("release task: %w", err)
	}
	defer rollback(ctx, tx)
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
	if err := notify(ctx, tx, WakeTasks, sessionID); err != nil {
		return fmt.Errorf("release task: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("release task: %w", err)
	}
	return nil
}

// TaskInput returns what the worker of t may see: the goal, its role, the
// channel notes it was given (those still kept), its
// dependencies with their results, the files handed to it, and the calls
// of its tools that earlier attempts recorded.
// master.ErrNotFound when the role has left the team. Its reads are sent
// together, in one round trip.
func (s *Store) TaskInput(ctx context.Context, t master.Task) (master.TaskInput, error) {
	var in master.TaskInput
	b := &pgx.Batch{}
	// The role, the goal and guild, the notes the task was given, and the
	// other roles, in one statement.
	b.Queue(`SELECT r.`+strings.ReplaceAll(roleColumns, ", ", ", r.")+`, s.goal, s.guild_id,
		       `+taskNotesSQL(`(SELECT tk.note_ids FROM tasks tk WHERE tk.id = $3)::bigint[]`)+`,
		       coalesce((SELECT json_agg(json_build_array(o.name, o.description) ORDER BY o.position, o.name)
		                 FROM session_roles o WHERE o.session_id = s.id AND o.name <> $2), '[]')
		FROM sessions s JOIN session_roles r ON r.session_id = s.id AND r.name = $2
		WHERE s.id = $1`, t.SessionID, t.Role, t.ID)
	if len(t.DependsOn) > 0 {
		b.Queue(`SELECT `+taskColumns+` FROM tasks t WHERE t.id = ANY ($1) ORDER BY t.id`, t.DependsOn)
	}
	if len(t.Attachments) > 0 {
		b.Queue(`SELECT `+attachmentColumns+`, a.data FROM attachments a
			WHERE a.id = ANY ($1) AND a.turn_id = $2 ORDER BY a.position`, t.Attachments, t.TurnID)
	}
	// A first attempt has no calls recorded by an earlier one.
	if t.Attempt > 1 {
		b.Queue(toolCallsSQL, t.ID)
	}
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	var team [][2]string
	var notes []byte
	role, err := scanRoleAnd(br.QueryRow(), &in.Goal, &in.GuildID, &notes, &team)
	if errors.Is(err, pgx.ErrNoRows) {
		return in, fmt.Errorf("task input: role %q is not on the team: %w", t.Role, master.ErrNotFound)
	}
	if err != nil {
		return in, fmt.Errorf("task input: role: %w", err)
	}
	in.Role = role
	if err := scanNotes(notes, &in.Notes); err != nil {
		return in, fmt.Errorf("task input: %w", err)
	}
	for _, r := range team {
		in.Team = append(in.Team, master.Role{Name: r[0], Description: r[1]})
	}
	if len(t.DependsOn) > 0 {
		rows, err := br.Query()
		if err != nil {
			return in, fmt.Errorf("task input: dependencies: %w", err)
		}
		if in.Deps, err = collectTasks(rows); err != nil {
			return in, fmt.Errorf("task input: dependencies: %w", err)
		}
	}
	if len(t.Attachments) > 0 {
		rows, err := br.Query()
		if err != nil {
			return in, fmt.Errorf("task input: attachments: %w", err)
		}
		if in.Attachments, err = collectAttachments(rows); err != nil {
			return in, fmt.Errorf("task input: attachments: %w", err)
		}
	}
	if t.Attempt > 1 {
		rows, err := br.Query()
		if err != nil {
			return in, fmt.Errorf("task input: tool calls: %w", err)
		}
		if in.Calls, err = collectCalls(rows); err != nil {
			return in, fmt.Errorf("task input: tool calls: %w", err)
		}
	}
	if err := br.Close(); err != nil {
		return in, fmt.Errorf("task input: %w", err)
	}
	return in, nil
}
