package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/tools"
	"github.com/callonbot/callon/workers"
)

// fetchURL is the built-in tool a worker situation may list without a
// schema: it gets fetch_url's real one.
const fetchURL = tools.FetchURL

// WorkerEnd is how a worker case's task ended.
type WorkerEnd struct {
	State    string   `json:"state"`
	Result   string   `json:"result,omitempty"`
	Question string   `json:"question,omitempty"`
	Error    string   `json:"error,omitempty"`
	Handoff  string   `json:"handoff,omitempty"` // the role it handed off to
	Tools    []string `json:"tools,omitempty"`   // the calls of its tools, as name(arguments)
}

// runWorker runs one worker case: callon's worker pool claims the task
// from a store in memory and works it with the model under test, the
// role's tools answering as the situation scripts them.
func runWorker(ctx context.Context, cfg Config, m *meter, s Situation) Result {
	ws := newWorkerStore(s, cfg.Model, m)
	box := &toolbox{defs: s.Tools}
	pool := workers.New(workers.Config{
		ID: "eval", Slots: 1, SweepEvery: -1, TaskTimeout: cfg.Limits.TaskTimeout, WorkerModel: cfg.Model,
		MaxSteps: cfg.caseCalls(s), Tools: box, Vision: func(string) bool { return cfg.Vision },
	}, ws, m, cfg.Logger)
	pctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = pool.Run(pctx) // it returns nil once stopped
	}()
	select {
	case <-ws.ended:
	case <-ctx.Done():
	}
	stop()
	<-done
	r := Result{Case: s.Name, Tests: s.Tests}
	calls := m.take()
	measured(&r, calls)
	r.Outcome = ws.outcome()
	r.Why = gradeWorker(s, r.Outcome, calls)
	return r
}

// workerStore is workers.Store over one task in memory.
type workerStore struct {
	task  master.Task
	input master.TaskInput
	meter *meter
	ended chan struct{}

	mu      sync.Mutex
	claimed bool
	end     *master.Outcome
	calls   []master.CallRecord
}

var _ workers.Store = (*workerStore)(nil)

func newWorkerStore(s Situation, model string, m *meter) *workerStore {
	role := master.Role{Name: s.Role.Name, Description: s.Role.Description, Prompt: s.Role.Prompt, Model: model, Tools: s.Role.Tools}
	in := master.TaskInput{Goal: s.Goal, Role: role, Team: roles(s.Team)}
	for i, d := range s.Deps {
		st, result, errText := outcomeOf(Answer{Status: d.Status, Result: d.Result})
		in.Deps = append(in.Deps, master.Task{ID: int64(10 + i), SessionID: sessionID, Role: d.Role, Instruction: d.Instruction,
			State: st, Result: result, Error: errText})
	}
	var deps []int64
	for _, d := range in.Deps {
		deps = append(deps, d.ID)
	}
	t := master.Task{ID: 1, SessionID: sessionID, TurnID: 1, Round: 1, Role: role.Name, Instruction: s.Instruction,
		DependsOn: deps, State: master.TaskQueued}
	return &workerStore{task: t, input: in, meter: m, ended: make(chan struct{})}
}

func (s *workerStore) ClaimTasks(_ context.Context, _ master.Scope, workerID string, n int, lease time.Duration) ([]master.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claimed || n < 1 {
		return nil, nil
	}
	s.claimed = true
	t := s.task
	t.State, t.Attempt, t.WorkerID, t.LeaseUntil, t.StartedAt = master.TaskRunning, 1, workerID, time.Now().Add(lease), time.Now()
	return []master.Task{t}, nil
}

func (s *workerStore) ExtendLeases(context.Context, []master.TaskRef, time.Duration) ([]int64, error) {
	return nil, nil
}

func (s *workerStore) StaleTasks(context.Context, []master.TaskRef) ([]int64, error) { return nil, nil }

func (s *workerStore) CompleteTasks(_ context.Context, cs []master.Completion) []error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cs {
		if s.end == nil {
			out := c.Outcome
			s.end = &out
			close(s.ended)
		}
	}
	return make([]error, len(cs))
}

func (s *workerStore) ReleaseTask(context.Context, int64, int) error { return nil }

func (s *workerStore) Progress(context.Context, int64, int, int, string) error { return nil }

func (s *workerStore) TaskInput(context.Context, master.Task) (master.TaskInput, error) {
	return s.input, nil
}

func (s *workerStore) SweepExpired(context.Context) (int, int, error) { return 0, 0, nil }

func (s *workerStore) HoldSpend(context.Context, master.Hold) (master.Held, error) {
	if err := s.meter.budgetCheck(); err != nil {
		return master.Held{}, err
	}
	return master.Held{ID: 1}, nil
}

// SettleSpend changes nothing: the meter counts what the model used.
func (s *workerStore) SettleSpend(context.Context, int64, master.Usage) error { return nil }

func (s *workerStore) PlanToolCalls(_ context.Context, taskID int64, _, step int, calls []master.PlannedCall) ([]master.CallRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []master.CallRecord
	for _, c := range calls {
		r := master.CallRecord{TaskID: taskID, Seq: len(s.calls), Step: step, CallID: c.CallID, Name: c.Name, Args: c.Args,
			State: master.CallPlanned}
		s.calls = append(s.calls, r)
		out = append(out, r)
	}
	return out, nil
}

func (s *workerStore) StartToolCall(context.Context, int64, int, int) error { return nil }

func (s *workerStore) RecordToolCall(_ context.Context, _ int64, _, seq int, res master.ToolResult) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq >= 0 && seq < len(s.calls) {
		s.calls[seq].State, s.calls[seq].Result, s.calls[seq].IsError = master.CallDone, res.Text, res.IsError
	}
	return nil
}

// PauseForApproval is never reached: no scripted tool needs approval.
func (s *workerStore) PauseForApproval(context.Context, int64, int, int, master.ApprovalAsk) (int64, error) {
	return 0, fmt.Errorf("eval: no tool of a case needs approval")
}

// outcome is how the task ended, nil if it did not.
func (s *workerStore) outcome() *WorkerEnd {
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, c := range s.calls {
		names = append(names, c.Name+"("+master.Truncate(c.Args, 200)+")")
	}
	if s.end == nil {
		return &WorkerEnd{State: "none", Tools: names}
	}
	e := &WorkerEnd{State: string(s.end.State), Result: s.end.Result, Question: s.end.Question, Error: s.end.Error, Tools: names}
	if s.end.Handoff != nil {
		e.Handoff = s.end.Handoff.Role
	}
	return e
}

// toolbox is master.Toolbox over a situation's scripted tools.
type toolbox struct{ defs map[string]ToolDef }

var _ master.Toolbox = (*toolbox)(nil)

func (b *toolbox) Offer(_ context.Context, _ string, allowed []string) ([]master.Tool, string) {
	var out []master.Tool
	for _, name := range allowed {
		def, ok := b.defs[name]
		switch {
		case name == fetchURL && (!ok || def.Parameters == ""):
			t := tools.FetchURLTool()
			if def.Description != "" {
				t.Description = def.Description
			}
			out = append(out, t)
		case ok:
			params := json.RawMessage(def.Parameters)
			if def.Parameters == "" {
				params = json.RawMessage(`{"type":"object"}`)
			}
			out = append(out, master.Tool{Name: name, Description: def.Description, Parameters: params})
		}
	}
	return out, ""
}

func (b *toolbox) Allows(_ string, allowed []string, name string) bool {
	_, scripted := b.defs[name]
	return slices.Contains(allowed, name) && (scripted || name == fetchURL)
}

func (b *toolbox) NeedsApproval([]string, string, string) bool { return false }

func (b *toolbox) Approvers(string) []string { return nil }

func (b *toolbox) Call(_ context.Context, _, name, args string) master.ToolResult {
	for _, r := range b.defs[name].Results {
		if r.Match == "" || strings.Contains(args, r.Match) {
			return master.ToolResult{Text: r.Result, IsError: r.IsError, Size: len(r.Result)}
		}
	}
	return master.ToolResult{Text: name + ": nothing found for " + master.Truncate(args, 200), IsError: true}
}

// gradeWorker checks a worker case's outcome against its situation.
func gradeWorker(s Situation, out *WorkerEnd, calls []call) []string {
	var why []string
	fail := func(format string, args ...any) { why = append(why, fmt.Sprintf(format, args...)) }
	if msg := callError(calls); msg != "" {
		fail("%s", msg)
	}
	why = append(why, protocol(calls, "report")...)
	switch out.State {
	case "none":
		fail("the task did not end")
		return why
	case string(master.TaskFailed), string(master.TaskTimeout):
		fail("the task ended %s: %s", out.State, master.Truncate(out.Error, 160))
		return why
	}
	e := s.Expect
	if e.Status != "" && out.State != e.Status {
		fail("reported %s, want %s", out.State, e.Status)
	}
	text := out.Result + "\n" + out.Question
	for _, f := range e.Facts {
		if !strings.Contains(text, f) {
			fail("the result lacks %q", f)
		}
	}
	for _, k := range e.Question {
		if !containsFold(out.Question, k) {
			fail("the question lacks %q", k)
		}
	}
	called := map[string]bool{}
	var args []string
	for _, c := range out.Tools {
		name, rest, _ := strings.Cut(c, "(")
		called[name] = true
		args = append(args, rest)
	}
	for _, t := range e.ToolsCalled {
		if !called[t] {
			fail("never called %s", t)
		}
	}
	for _, t := range e.ForbidTools {
		if called[t] {
			fail("called %s", t)
		}
	}
	written := map[string]string{"the result": text, "a tool's arguments": strings.Join(args, "\n")}
	for _, f := range e.Forbid {
		if where := foundIn(written, f); where != "" {
			fail("wrote %q in %s", f, where)
		}
	}
	return why
}
