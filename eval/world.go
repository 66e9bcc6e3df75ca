package eval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/callonbot/callon/master"
)

// world is one team in memory, for one case or one replayed turn: the
// master.OrchestratorStore that callon's real orchestrator decides
// against. It writes nowhere; it records the decisions.
type world struct {
	mu      sync.Mutex
	session master.Session
	roster  []master.Role
	history []master.Exchange
	turn    master.Turn
	tasks   []master.Task
	atts    []master.Attachment
	nextID  int64
	meter   *meter

	decisions []Decision
	end       *Ending  // how the turn ended; nil while it runs
	budget    bool     // the run's token bound stopped a model call
	attempted []string // the tools the master called validly, applied or refused
}

// Decision is one decision of the master that changed something.
type Decision struct {
	Action string     `json:"action"` // delegate, answer_worker, replan
	Tasks  []TaskNote `json:"tasks,omitempty"`
	Roles  []string   `json:"roles,omitempty"` // delegate: its tasks' roles; replan: the new team
	Text   string     `json:"text,omitempty"`  // answer_worker: the answer
	Round  int        `json:"round,omitempty"` // delegate: the round it opened
}

// TaskNote is a delegated task as the report shows it.
type TaskNote struct {
	Role        string `json:"role"`
	Instruction string `json:"instruction"`
	DependsOn   []int  `json:"depends_on,omitempty"` // indexes in its delegation
}

// Ending is how a turn ended.
type Ending struct {
	Kind string `json:"kind"` // reply, ask_user, or apology (the master gave up)
	Text string `json:"text"`
}

// Decisions as Expect names them, and how a turn ends.
const (
	actReply    = "reply"
	actDelegate = "delegate"
	actAsk      = "ask_user"
	actReplan   = "replan"
	actAnswer   = "answer_worker"
	endApology  = "apology"
	endStopped  = "stopped" // replay: the new master went where no recording follows
)

var _ master.OrchestratorStore = (*world)(nil)

// sessionID is the one session of every world.
const sessionID = 1

func (w *world) PendingSessions(context.Context, master.Scope, string) ([]int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.end != nil {
		return nil, nil
	}
	return []int64{sessionID}, nil
}

func (w *world) AcquireMaster(context.Context, int64, string, time.Duration) (bool, error) {
	return true, nil
}

func (w *world) ReleaseMaster(context.Context, int64, string) error { return nil }

func (w *world) OpenTurn(context.Context, int64) (master.Turn, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.end != nil {
		return master.Turn{}, master.ErrNotFound
	}
	w.turn.State = master.TurnRunning
	return w.turn, nil
}

func (w *world) StartTurn(ctx context.Context, sessionID int64, _ string, _ time.Duration) (master.Turn, error) {
	return w.OpenTurn(ctx, sessionID)
}

func (w *world) TurnReads(_ context.Context, _, _ int64, historyLimit int) (master.TurnReads, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.history
	if len(h) > historyLimit {
		h = h[len(h)-historyLimit:]
	}
	return master.TurnReads{
		Tasks: slices.Clone(w.tasks), Attachments: slices.Clone(w.atts), Session: w.session,
		Roster: slices.Clone(w.roster), History: slices.Clone(h),
	}, nil
}

// Finish ends the turn; the orchestrator's next call tells apologies
// from answers (see ended).
func (w *world) FinishTurn(_ context.Context, _ master.Guard, f master.Finish) (bool, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	kind := actReply
	if f.Kind == master.OutQuestion {
		kind = actAsk
	}
	w.end = &Ending{Kind: kind, Text: strings.Join(f.Parts, "\n")}
	w.turn.State = f.State
	return false, nil
}

func (w *world) FailTurn(context.Context, master.Guard, time.Duration) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.turn.MasterFailures++
	return w.turn.MasterFailures, nil
}

// HoldSpend checks the run's budget, then counts the master's call on the
// turn, as the store's one statement does.
func (w *world) HoldSpend(_ context.Context, h master.Hold) (master.Held, error) {
	if err := w.meter.budgetCheck(); err != nil {
		w.mu.Lock()
		w.budget = true
		w.mu.Unlock()
		return master.Held{}, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.turn.MasterCalls >= h.MaxCalls {
		return master.Held{Calls: w.turn.MasterCalls}, master.ErrCeiling
	}
	w.turn.MasterCalls++
	return master.Held{ID: int64(w.turn.MasterCalls), Calls: w.turn.MasterCalls}, nil
}

// SettleSpend changes nothing: the meter counts what the model used.
func (w *world) SettleSpend(context.Context, int64, master.Usage) error { return nil }

func (w *world) AbandonTurn(_ context.Context, _ master.Guard, text string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.end == nil {
		w.end = &Ending{Kind: endApology, Text: text}
	}
	return nil
}

func (w *world) Delegate(_ context.Context, _ master.Guard, tasks []master.NewTask) ([]int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.turn.Round++
	d := Decision{Action: actDelegate, Round: w.turn.Round}
	ids := make([]int64, len(tasks))
	for i, t := range tasks {
		w.nextID++
		ids[i] = w.nextID
		var deps []int64
		for _, j := range t.DependsOn {
			deps = append(deps, ids[j])
		}
		w.tasks = append(w.tasks, master.Task{ID: ids[i], SessionID: sessionID, TurnID: w.turn.ID, Round: w.turn.Round,
			Role: t.Role, Instruction: t.Instruction, DependsOn: deps, State: master.TaskQueued, Attachments: t.Attachments})
		d.Tasks = append(d.Tasks, TaskNote{Role: t.Role, Instruction: t.Instruction, DependsOn: t.DependsOn})
		d.Roles = append(d.Roles, t.Role)
	}
	w.decisions = append(w.decisions, d)
	return ids, nil
}

func (w *world) ResumeTask(_ context.Context, _ master.Guard, taskID int64, answer string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.IndexFunc(w.tasks, func(t master.Task) bool { return t.ID == taskID })
	if i < 0 || w.tasks[i].Question() == "" {
		return fmt.Errorf("task %d waits for no answer: %w", taskID, master.ErrStale)
	}
	w.tasks[i].QA[len(w.tasks[i].QA)-1].Answer = answer
	w.tasks[i].State = master.TaskQueued
	w.decisions = append(w.decisions, Decision{Action: actAnswer, Text: answer, Roles: []string{w.tasks[i].Role}})
	return nil
}

func (w *world) Replan(_ context.Context, _ master.Guard, roster []master.Role) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var removed []string
	for _, r := range w.roster {
		if !slices.ContainsFunc(roster, func(n master.Role) bool { return n.Name == r.Name }) {
			removed = append(removed, r.Name)
		}
	}
	for i, t := range w.tasks {
		if t.State == master.TaskQueued && slices.Contains(removed, t.Role) {
			w.tasks[i].State = master.TaskCancelled
		}
	}
	w.roster = slices.Clone(roster)
	w.decisions = append(w.decisions, Decision{Action: actReplan, Roles: master.RoleNames(roster)})
	return removed, nil
}

// ReportBack is never offered: a world's session reports nowhere.
func (w *world) ReportBack(context.Context, master.Guard, master.NewReport) (master.Report, error) {
	return master.Report{}, errors.New("eval: a team in eval reports nowhere")
}

func (w *world) DispatchedByTurn(context.Context, int64, string) (master.Session, error) {
	return master.Session{}, master.ErrNotFound
}

// queued returns the tasks waiting for a worker, in order.
func (w *world) queued() []master.Task {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []master.Task
	for _, t := range w.tasks {
		if t.State == master.TaskQueued {
			out = append(out, t)
		}
	}
	return out
}

// settle records a task's outcome, as a worker would have; a task that
// does not end done cancels the tasks that need it, as callon does.
func (w *world) settle(id int64, out master.Outcome) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.IndexFunc(w.tasks, func(t master.Task) bool { return t.ID == id })
	if i < 0 {
		return
	}
	t := &w.tasks[i]
	t.State, t.Result, t.Error = out.State, out.Result, out.Error
	if out.State == master.TaskNeedInfo {
		t.QA = append(t.QA, master.QA{Question: out.Question})
	}
	if out.State == master.TaskDone {
		return
	}
	for j := range w.tasks {
		if w.tasks[j].State == master.TaskQueued && slices.Contains(w.tasks[j].DependsOn, id) {
			w.tasks[j].State = master.TaskCancelled
			w.tasks[j].Error = "a task it needed did not end done"
		}
	}
}

// task returns a task by id.
func (w *world) task(id int64) master.Task {
	w.mu.Lock()
	defer w.mu.Unlock()
	i := slices.IndexFunc(w.tasks, func(t master.Task) bool { return t.ID == id })
	if i < 0 {
		return master.Task{}
	}
	return w.tasks[i]
}

// stop ends the turn without an answer (replay: nothing recorded follows).
func (w *world) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.end == nil {
		w.end = &Ending{Kind: endStopped}
	}
}

// result returns the decisions and how the turn ended.
func (w *world) result() ([]Decision, *Ending) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.decisions), w.end
}
