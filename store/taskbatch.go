package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

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
	for _, i := range idx {
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

	tx, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("complete tasks: %w", err)
	}
	defer rollback(ctx, tx)
	// Rows are locked in id order, so that two batches (or a batch and a
	// lease extension, which skips locked rows anyway) never deadlock.
	res, err := tx.Query(ctx, `
		WITH input AS (
			SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(id bigint, attempt int, state text, result text,
				error text, question text, kind text, payload jsonb)
		), locked AS (
			SELECT t.id FROM tasks t JOIN input i ON i.id = t.id
			WHERE t.state = 'running' AND t.attempt = i.attempt
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
			WHERE t.id = l.id AND t.state = 'running' AND t.attempt = i.attempt
			RETURNING t.id, t.session_id, t.turn_id, t.round, i.kind, i.payload
		), signalled AS (
			INSERT INTO signals (session_id, task_id, kind, payload)
			SELECT e.session_id, e.id, e.kind, e.payload FROM ended e ORDER BY e.id
		)
		SELECT e.id, e.session_id,
		       -- Workers need waking only for tasks that waited on these,
		       EXISTS (SELECT 1 FROM tasks d WHERE d.state = 'queued' AND d.depends_on && ARRAY(SELECT id FROM ended)),
		       -- and the master only once its round has ended.
		       NOT EXISTS (SELECT 1 FROM tasks x WHERE x.turn_id = e.turn_id AND x.round = e.round
		                   AND x.state IN ('queued', 'running', 'approval') AND x.id NOT IN (SELECT id FROM ended))
		FROM ended e`, input)
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
	// The master is woken once its round has ended (a task cancelled
	// below may end it too: then every session is woken); the workers
	// when a task waited on these.
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
