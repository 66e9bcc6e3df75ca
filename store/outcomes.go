package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// Every task that reaches a terminal state gets exactly one signal in the
// same transaction: TASK_COMPLETE (done, failed, timeout, cancelled),
// BLOCKED or NEED_INFO. Every transaction that makes a task claimable or
// ends one sends one wake.

// maxRoundTasks bounds a round, handoffs included.
const maxRoundTasks = 25

// maxCompletions bounds the outcomes one CompleteTasks statement writes;
// a longer list is written in several transactions.
const maxCompletions = 256

// CompleteTasks writes several workers' outcomes, each exactly as
// CompleteTask would (guarded by state and attempt, with its signal, its
// usage, its dependents cancelled unless done), and returns one error per
// completion: nil when written, master.ErrStale when the task is no
// longer running under that attempt (nothing is written for it), or why
// it could not be written. Outcomes without a handoff are written
// together, in one transaction with one wake per session touched; if that
// transaction fails, each is written on its own, so one bad outcome
// cannot keep the others unwritten. A handoff is written on its own.
func (s *Store) CompleteTasks(ctx context.Context, cs []master.Completion) []error {
	errs := make([]error, len(cs))
	var batch []int // indexes of cs written together
	seen := make(map[int64]bool, len(cs))
	for i, c := range cs {
		out, err := cleanOutcome(c.Outcome)
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("complete task %d: %w", c.Task.ID, err)
		case seen[c.Task.ID]:
			// One task ends once: a second outcome in the same call is stale.
			errs[i] = fmt.Errorf("complete task %d: attempt %d: %w", c.Task.ID, c.Task.Attempt, master.ErrStale)
		case out.Handoff != nil:
			seen[c.Task.ID] = true
			_, errs[i] = s.CompleteTask(ctx, c.Task.ID, c.Task.Attempt, out)
		default:
			seen[c.Task.ID] = true
			cs[i].Outcome = out
			batch = append(batch, i)
		}
	}
	for len(batch) > 0 {
		n := min(len(batch), maxCompletions)
		part := batch[:n]
		batch = batch[n:]
		written, err := s.completeBatch(ctx, cs, part)
		if err != nil {
			// Each on its own: the guard still decides, and an error
			// stays with the outcome that caused it.
			for _, i := range part {
				_, errs[i] = s.CompleteTask(ctx, cs[i].Task.ID, cs[i].Task.Attempt, cs[i].Outcome)
			}
			continue
		}
		for _, i := range part {
			if !written[cs[i].Task.ID] {
				errs[i] = fmt.Errorf("complete task %d: attempt %d: %w", cs[i].Task.ID, cs[i].Task.Attempt, master.ErrStale)
			}
		}
	}
	return errs
}

// completeCTEs write a batch of outcomes ($1, the jsonb list; $2, their
// task ids): input, locked (the rows still running under their attempt,
// locked in id order, so that two batches, or a batch and a lease
// extension, which skips locked rows anyway, never deadlock), ended (the
// rows written), signalled (their signals) and rounds (the rounds they
// were of).
const completeCTEs = `
		WITH input AS (
			SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(id bigint, attempt int, state text, result text,
				error text, question text, kind text, payload jsonb)
		), locked AS (
			-- id = ANY ($2) too: the rows are found by their key, however
			-- the planner estimates the list's length.
			SELECT t.id FROM tasks t JOIN input i ON i.id = t.id
			WHERE t.id = ANY ($2) AND t.state = 'running' AND t.attempt = i.attempt
			ORDER BY t.id
			FOR UPDATE OF t
		), ended AS (
			UPDATE tasks t
			SET state = i.state, result = nullif(i.result, ''), error = nullif(i.error, ''),
			    qa = CASE WHEN i.state = 'need_info'
			              THEN t.qa || jsonb_build_array(jsonb_build_object('q', i.question, 'a', ''))
			              ELSE t.qa END,
			    lease_until = NULL, ended_at = now(), updated_at = now()
			FROM locked l JOIN input i ON i.id = l.id
			WHERE t.id = ANY ($2) AND t.id = l.id AND t.state = 'running' AND t.attempt = i.attempt
			RETURNING t.id, t.session_id, t.turn_id, t.round, t.worker_id, i.kind, i.payload
		), signalled AS (
			INSERT INTO signals (session_id, task_id, kind, payload)
			SELECT e.session_id, e.id, e.kind, e.payload FROM ended e ORDER BY e.id
		), rounds AS (
			SELECT DISTINCT turn_id, round FROM ended
		)
`

// roundDoneHere is a condition over an ended row e: nothing of e's round
// is left to do but tasks running under other workers. Then the master is
// woken: its round has ended, or the rest may be ending at this instant
// in another process, whose statement, like this one, would see this
// task still running and wake no one (the master's read finds out which;
// the later of the two wakes comes after both commits). Outcomes of one
// process are written one write after another, so within a process the
// wake comes exactly when the round ends.
const roundDoneHere = `NOT EXISTS (SELECT 1 FROM tasks x WHERE x.turn_id = e.turn_id AND x.round = e.round
		AND x.id NOT IN (SELECT id FROM ended)
		AND (x.state IN ('queued', 'approval') OR (x.state = 'running' AND x.worker_id IS NOT DISTINCT FROM e.worker_id)))`

// completeAloneSQL is completeCTEs in one statement, for outcomes that are
// all done (nothing to cancel after them): the wakes go out in it too,
// per session touched, "m" once its round may have ended (roundDoneHere)
// and "t" when a queued task waited on these ($3 is the channel). It returns each row written,
// with its session's payload ("" for none).
const completeAloneSQL = completeCTEs + `, flags AS (
			SELECT EXISTS (SELECT 1 FROM tasks d JOIN rounds r ON d.turn_id = r.turn_id AND d.round = r.round
			               WHERE d.state = 'queued' AND d.depends_on && ARRAY(SELECT id FROM ended)) AS unblocked
		), per AS (
			SELECT e.session_id,
			       bool_or(` + roundDoneHere + `) AS round_ended
			FROM ended e GROUP BY e.session_id
		), payloads AS (
			SELECT per.session_id, CASE WHEN per.round_ended OR f.unblocked
			       THEN CASE WHEN per.round_ended THEN 'm' ELSE '' END || CASE WHEN f.unblocked THEN 't' ELSE '' END
			            || ':' || per.session_id
			       ELSE '' END AS payload
			FROM per, flags f
		), woken AS (
			SELECT pg_notify($3, p.payload) FROM payloads p WHERE p.payload <> ''
		)
		SELECT e.id, p.payload, (SELECT count(*) FROM woken)
		FROM ended e JOIN payloads p ON p.session_id = e.session_id`

// wakeSessions returns the sessions of the outcomes cs[i], i in idx, when
// they can be written by completeAlone: every outcome done, and every
// session known, at most maxWakes of them.
func wakeSessions(cs []master.Completion, idx []int) ([]int64, bool) {
	var sessions []int64
	for _, i := range idx {
		c := cs[i]
		if c.Outcome.State != master.TaskDone || c.SessionID == 0 {
			return nil, false
		}
		if !slices.Contains(sessions, c.SessionID) {
			sessions = append(sessions, c.SessionID)
		}
	}
	return sessions, len(sessions) <= maxWakes
}

// completeAlone writes done outcomes in one statement (completeAloneSQL):
// one round trip and one commit, its wakes sent in it. Each payload the
// statement may send for sessions is expected beforehand, so that the
// ones it sent are handed to this process's listeners at once and their
// copies skipped, as a transaction's are (see localWakes).
func (s *Store) completeAlone(ctx context.Context, input []byte, ids, sessions []int64) (map[int64]bool, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("complete tasks: %w", err)
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	var expected []expectedWake
	for _, sid := range sessions {
		for _, k := range []Kinds{WakeMaster, WakeTasks, WakeMaster + WakeTasks} {
			expected = append(expected, s.wakes.expect(pid, payloadOf(k, strconv.FormatInt(sid, 10))))
		}
	}
	written := make(map[int64]bool, len(ids))
	var sent []string
	rows, err := conn.Query(ctx, completeAloneSQL, input, ids, WakeChannel)
	if err == nil {
		var id int64
		var payload string
		var n int
		_, err = pgx.ForEachRow(rows, []any{&id, &payload, &n}, func() error {
			written[id] = true
			// A payload of a session not expected (a completion whose
			// SessionID was wrong) reaches this process by its listener.
			if payload != "" && !slices.Contains(sent, payload) &&
				slices.ContainsFunc(expected, func(e expectedWake) bool { return e.payload == payload }) {
				sent = append(sent, payload)
			}
			return nil
		})
	}
	for _, e := range expected {
		if err != nil || !slices.Contains(sent, e.payload) {
			s.wakes.forget(e)
		}
	}
	if err != nil {
		// It may have committed all the same (the connection broke): the
		// NOTIFYs then come through the listener, no longer skipped.
		return nil, fmt.Errorf("complete tasks: %w", err)
	}
	for _, p := range sent {
		s.wakes.deliver(p)
	}
	return written, nil
}

// completeBatch writes the outcomes cs[i] for i in idx (none with a
// handoff, all valid, distinct tasks) in one transaction, and returns the
// ids of the tasks it ended; the others were not running under their
// attempt.
func (s *Store) completeBatch(ctx context.Context, cs []master.Completion, idx []int) (map[int64]bool, error) {
	type row struct {
		ID       int64           `json:"id"`
		Attempt  int             `json:"attempt"`
		State    string          `json:"state"`
		Result   string          `json:"result"`
		Error    string          `json:"error"`
		Question string          `json:"question"`
		Kind     string          `json:"kind"`
		Payload  json.RawMessage `json:"payload"`
	}
	rows := make([]row, 0, len(idx))
	ids := make([]int64, 0, len(idx))
	for _, i := range idx {
		ids = append(ids, cs[i].Task.ID)
		c := cs[i]
		kind, payload, err := outcomeSignal(c.Outcome)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row{ID: c.Task.ID, Attempt: c.Task.Attempt, State: string(c.Outcome.State),
			Result: c.Outcome.Result, Error: c.Outcome.Error, Question: c.Outcome.Question,
			Kind: string(kind), Payload: payload})
	}
	input, err := marshalJSON(rows)
	if err != nil {
		return nil, err
	}

	if sessions, ok := wakeSessions(cs, idx); ok {
		return s.completeAlone(ctx, input, ids, sessions)
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("complete tasks: %w", err)
	}
	defer rollback(ctx, tx)
	res, err := tx.Query(ctx, completeCTEs+`		SELECT e.id, e.session_id,
		       -- Workers need waking only for tasks that waited on these (a
		       -- task depends only on tasks of its own turn and round),
		       EXISTS (SELECT 1 FROM tasks d JOIN rounds r ON d.turn_id = r.turn_id AND d.round = r.round
		               WHERE d.state = 'queued' AND d.depends_on && ARRAY(SELECT id FROM ended)),
		       -- and the master once its round may have ended.
		       `+roundDoneHere+`
		FROM ended e`, input, ids)
	if err != nil {
		return nil, fmt.Errorf("complete tasks: %w", err)
	}
	written := make(map[int64]bool, len(idx))
	var sessions, ended []int64 // every session touched; those whose round ended
	var id, sid int64
	var unblocked, roundEnded bool
	if _, err := pgx.ForEachRow(res, []any{&id, &sid, &unblocked, &roundEnded}, func() error {
		written[id] = true
		sessions = append(sessions, sid)
		if roundEnded {
			ended = append(ended, sid)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("complete tasks: %w", err)
	}
	if len(written) == 0 {
		return written, nil // nothing changed: no wake
	}
	var roots []int64
	for _, i := range idx {
		c := cs[i]
		if !written[c.Task.ID] {
			continue
		}
		if c.Outcome.State != master.TaskDone {
			roots = append(roots, c.Task.ID)
		}
	}
	if len(roots) > 0 {
		if _, err := cancelDependents(ctx, tx, roots); err != nil {
			return nil, fmt.Errorf("complete tasks: %w", err)
		}
	}
	// The master is woken once its round may have ended (roundDoneHere;
	// a task cancelled below may end it too: then every session is
	// woken); the workers when a task waited on these.
	master, other := ended, sessions
	if len(roots) > 0 {
		master = sessions
	}
	var kinds Kinds
	if unblocked {
		kinds = WakeTasks
	}
	if err := notifyEach(ctx, tx, WakeMaster+kinds, master); err != nil {
		return nil, fmt.Errorf("complete tasks: %w", err)
	}
	if kinds == "" {
		other = nil
	}
	other = slices.DeleteFunc(slices.Clone(other), func(id int64) bool { return slices.Contains(master, id) })
	if err := notifyEach(ctx, tx, kinds, other); err != nil {
		return nil, fmt.Errorf("complete tasks: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("complete tasks: %w", err)
	}
	return written, nil
}

// cleanOutcome returns out with its texts cleaned, or why a worker cannot
// end a task with it.
func cleanOutcome(out master.Outcome) (master.Outcome, error) {
	out.Result, out.Error, out.Question = cleanText(out.Result), cleanText(out.Error), cleanText(out.Question)
	if out.Handoff != nil {
		h := *out.Handoff
		h.Instruction = cleanText(h.Instruction)
		out.Handoff = &h
	}
	switch out.State {
	case master.TaskDone, master.TaskFailed, master.TaskBlocked, master.TaskNeedInfo, master.TaskTimeout:
	default:
		return out, fmt.Errorf("outcome state %q is not one a worker ends with", out.State)
	}
	if out.Handoff != nil && out.State != master.TaskDone {
		return out, fmt.Errorf("a handoff needs state done, not %q", out.State)
	}
	return out, nil
}

// CompleteTask ends a running task with out, if it is still running under
// attempt; otherwise (re-claimed, cancelled, swept) it changes nothing
// and returns master.ErrStale. It adds the usage to the session's totals,
// writes the task's signal, cancels every queued task that depends on it
// (transitively) unless it is done, and wakes the session.
func (s *Store) CompleteTask(ctx context.Context, taskID int64, attempt int, out master.Outcome) (master.Task, error) {
	out, err := cleanOutcome(out)
	if err != nil {
		return master.Task{}, fmt.Errorf("complete task %d: %w", taskID, err)
	}
	tx, err := s.begin(ctx)
	if err != nil {
		return master.Task{}, fmt.Errorf("complete task: %w", err)
	}
	defer rollback(ctx, tx)
	t, err := completeTask(ctx, tx, taskID, attempt, out, s.attempts())
	if err != nil {
		return master.Task{}, fmt.Errorf("complete task %d: %w", taskID, err)
	}
	if err := notify(ctx, tx, WakeMaster+WakeTasks, t.SessionID); err != nil {
		return master.Task{}, fmt.Errorf("complete task: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return master.Task{}, fmt.Errorf("complete task: %w", err)
	}
	return t, nil
}

func completeTask(ctx context.Context, tx pgx.Tx, taskID int64, attempt int, out master.Outcome, attempts int) (master.Task, error) {
	// A need_info outcome appends its question, unanswered, to qa.
	row := tx.QueryRow(ctx, `
		UPDATE tasks t
		SET state = $3, result = nullif($4, ''), error = nullif($5, ''),
		    qa = CASE WHEN $3 = 'need_info' THEN t.qa || jsonb_build_array(jsonb_build_object('q', $6::text, 'a', ''))
		              ELSE t.qa END,
		    lease_until = NULL, ended_at = now(), updated_at = now()
		WHERE t.id = $1 AND t.state = 'running' AND t.attempt = $2
		RETURNING `+taskColumns,
		taskID, attempt, out.State, out.Result, out.Error, out.Question)
	t, err := scanTask(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return master.Task{}, fmt.Errorf("attempt %d: %w", attempt, master.ErrStale)
	}
	if err != nil {
		return master.Task{}, err
	}
	kind, payload, err := outcomeSignal(out)
	if err != nil {
		return master.Task{}, err
	}
	if _, err := addSignal(ctx, tx, t.SessionID, t.ID, kind, payload); err != nil {
		return master.Task{}, err
	}
	if out.State != master.TaskDone {
		if _, err := cancelDependents(ctx, tx, []int64{t.ID}); err != nil {
			return master.Task{}, err
		}
	}
	if out.Handoff != nil {
		if err := handoff(ctx, tx, t, *out.Handoff, attempts); err != nil {
			return master.Task{}, err
		}
	}
	return t, nil
}

// handoff queues the task a worker handed its work to: the same turn and
// round, for another role of the team, depending on the finished task so
// it receives its result, with the same files, with a HANDOFF signal.
func handoff(ctx context.Context, tx pgx.Tx, from master.Task, h master.Handoff, attempts int) error {
	var onTeam bool
	var inRound int
	err := tx.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM session_roles WHERE session_id = $1 AND name = $2),
		       (SELECT count(*) FROM tasks WHERE turn_id = $3 AND round = $4)`,
		from.SessionID, h.Role, from.TurnID, from.Round).Scan(&onTeam, &inRound)
	switch {
	case err != nil:
		return fmt.Errorf("handoff: %w", err)
	case !onTeam:
		return fmt.Errorf("handoff: role %q is not on the team", h.Role)
	case inRound >= maxRoundTasks:
		return fmt.Errorf("handoff: the round already has %d tasks", inRound)
	}
	var id int64
	if err := tx.QueryRow(ctx, `
		INSERT INTO tasks (session_id, turn_id, round, role, instruction, depends_on, max_attempts, attachment_ids)
		VALUES ($1, $2, $3, $4, $5, ARRAY[$6::bigint], $7, (SELECT attachment_ids FROM tasks WHERE id = $6)) RETURNING id`,
		from.SessionID, from.TurnID, from.Round, h.Role, h.Instruction, from.ID, attempts).Scan(&id); err != nil {
		return fmt.Errorf("handoff: %w", err)
	}
	payload, err := marshalJSON(map[string]any{"from": from.Role, "to": h.Role, "instruction": h.Instruction, "task": id})
	if err != nil {
		return fmt.Errorf("handoff: %w", err)
	}
	if _, err := addSignal(ctx, tx, from.SessionID, from.ID, master.SignalHandoff, payload); err != nil {
		return fmt.Errorf("handoff: %w", err)
	}
	return nil
}

// outcomeSignal is the signal a worker's outcome writes.
func outcomeSignal(out master.Outcome) (master.SignalKind, []byte, error) {
	var kind master.SignalKind
	var payload any
	switch out.State {
	case master.TaskBlocked:
		kind = master.SignalBlocked
		payload = map[string]string{"reason": cmp.Or(out.Result, out.Error)}
	case master.TaskNeedInfo:
		kind = master.SignalNeedInfo
		payload = map[string]string{"question": cmp.Or(out.Question, out.Result)}
	default:
		kind = master.SignalTaskComplete
		p := map[string]any{
			"state":  out.State,
			"tokens": map[string]int64{"prompt": out.Usage.PromptTokens, "completion": out.Usage.CompletionTokens},
		}
		if out.Error != "" {
			p["error"] = out.Error
		}
		payload = p
	}
	b, err := marshalJSON(payload)
	return kind, b, err
}

// cancelDependents cancels every queued task of the same turn that
// depends, directly or transitively, on one of roots (already ended in
// tx), with a TASK_COMPLETE signal each. It returns the session ids of
// the cancelled tasks.
func cancelDependents(ctx context.Context, tx pgx.Tx, roots []int64) ([]int64, error) {
	rows, err := tx.Query(ctx, `
		WITH RECURSIVE dependents (id, parent, parent_state) AS (
			SELECT t.id, r.id, r.state
			FROM tasks r
			JOIN tasks t ON t.turn_id = r.turn_id AND r.id = ANY (t.depends_on)
			WHERE r.id = ANY ($1) AND t.state = 'queued'
		  UNION
			SELECT t.id, d.id, 'cancelled'
			FROM dependents d
			JOIN tasks p ON p.id = d.id
			JOIN tasks t ON t.turn_id = p.turn_id AND d.id = ANY (t.depends_on)
			WHERE t.state = 'queued'
		), first AS (
			SELECT DISTINCT ON (id) id, parent, parent_state FROM dependents ORDER BY id, parent
		), cancelled AS (
			UPDATE tasks t
			SET state = 'cancelled', lease_until = NULL, ended_at = now(), updated_at = now(),
			    error = 'dependency #' || f.parent || ' ended ' || f.parent_state
			FROM first f
			WHERE t.id = f.id AND t.state = 'queued'
			RETURNING t.id, t.session_id, t.error
		), signalled AS (
			INSERT INTO signals (session_id, task_id, kind, payload)
			SELECT c.session_id, c.id, 'TASK_COMPLETE', jsonb_build_object('state', 'cancelled', 'error', c.error)
			FROM cancelled c
		)
		SELECT session_id FROM cancelled`, roots)
	if err != nil {
		return nil, fmt.Errorf("cancel dependents: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("cancel dependents: %w", err)
	}
	return ids, nil
}
