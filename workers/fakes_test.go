package workers

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// fakeStore is a Store whose methods call its Func fields; a nil field
// answers with zero values.
type fakeStore struct {
	ClaimTasksFunc   func(ctx context.Context, workerID string, n int, lease time.Duration) ([]master.Task, error)
	ExtendLeasesFunc func(ctx context.Context, refs []master.TaskRef, lease time.Duration) ([]int64, error)
	StaleTasksFunc   func(ctx context.Context, refs []master.TaskRef) ([]int64, error)
	CompleteTaskFunc func(ctx context.Context, taskID int64, attempt int, out master.Outcome) (master.Task, error)
	ReleaseTaskFunc  func(ctx context.Context, taskID int64, attempt int) error
	ProgressFunc     func(ctx context.Context, taskID int64, attempt int, percent int, note string) error
	TaskInputFunc    func(ctx context.Context, t master.Task) (TaskInput, error)
	SweepExpiredFunc func(ctx context.Context) (int, int, error)
	HoldSpendFunc    func(ctx context.Context, h master.Hold) error
	SettleSpendFunc  func(ctx context.Context, id int64, u master.Usage) error

	ToolCallsFunc        func(ctx context.Context, taskID int64) ([]master.CallRecord, error)
	PlanToolCallsFunc    func(ctx context.Context, taskID int64, attempt, step int, calls []master.PlannedCall) ([]master.CallRecord, error)
	StartToolCallFunc    func(ctx context.Context, taskID int64, attempt, seq int) error
	RecordToolCallFunc   func(ctx context.Context, taskID int64, attempt, seq int, res master.ToolResult) error
	PauseForApprovalFunc func(ctx context.Context, taskID int64, attempt, seq int, timeout time.Duration) (int64, error)
	approvers            []string // passed to the latest pause

	holds    sync.Mutex // guards lastHold
	lastHold int64
}

var _ Store = (*fakeStore)(nil)

func (f *fakeStore) ClaimTasks(ctx context.Context, _ master.Scope, workerID string, n int, lease time.Duration) ([]master.Task, error) {
	if f.ClaimTasksFunc == nil {
		return nil, nil
	}
	return f.ClaimTasksFunc(ctx, workerID, n, lease)
}

func (f *fakeStore) ExtendLeases(ctx context.Context, refs []master.TaskRef, lease time.Duration) ([]int64, error) {
	if f.ExtendLeasesFunc == nil {
		return nil, nil
	}
	return f.ExtendLeasesFunc(ctx, refs, lease)
}

func (f *fakeStore) StaleTasks(ctx context.Context, refs []master.TaskRef) ([]int64, error) {
	if f.StaleTasksFunc == nil {
		return nil, nil
	}
	return f.StaleTasksFunc(ctx, refs)
}

// CompleteTasks calls CompleteTaskFunc for each completion, in order.
func (f *fakeStore) CompleteTasks(ctx context.Context, cs []master.Completion) []error {
	errs := make([]error, len(cs))
	if f.CompleteTaskFunc == nil {
		return errs
	}
	for i, c := range cs {
		_, errs[i] = f.CompleteTaskFunc(ctx, c.Task.ID, c.Task.Attempt, c.Outcome)
	}
	return errs
}

func (f *fakeStore) ReleaseTask(ctx context.Context, taskID int64, attempt int) error {
	if f.ReleaseTaskFunc == nil {
		return nil
	}
	return f.ReleaseTaskFunc(ctx, taskID, attempt)
}

func (f *fakeStore) Progress(ctx context.Context, taskID int64, attempt int, percent int, note string) error {
	if f.ProgressFunc == nil {
		return nil
	}
	return f.ProgressFunc(ctx, taskID, attempt, percent, note)
}

func (f *fakeStore) TaskInput(ctx context.Context, t master.Task) (TaskInput, error) {
	in := TaskInput{Goal: "the goal", Role: master.Role{Name: t.Role}}
	if f.TaskInputFunc != nil {
		var err error
		if in, err = f.TaskInputFunc(ctx, t); err != nil {
			return in, err
		}
	}
	// The recorded calls come with the input, as the store's do.
	if in.Calls == nil && f.ToolCallsFunc != nil {
		calls, err := f.ToolCallsFunc(ctx, t.ID)
		if err != nil {
			return in, err
		}
		in.Calls = calls
	}
	return in, nil
}

func (f *fakeStore) SweepExpired(ctx context.Context) (int, int, error) {
	if f.SweepExpiredFunc == nil {
		return 0, 0, nil
	}
	return f.SweepExpiredFunc(ctx)
}

// HoldSpend grants every hold HoldSpendFunc does not refuse, numbered
// from 1.
func (f *fakeStore) HoldSpend(ctx context.Context, h master.Hold) (master.Held, error) {
	if f.HoldSpendFunc != nil {
		if err := f.HoldSpendFunc(ctx, h); err != nil {
			return master.Held{}, err
		}
	}
	f.holds.Lock()
	defer f.holds.Unlock()
	f.lastHold++
	return master.Held{ID: f.lastHold}, nil
}

func (f *fakeStore) SettleSpend(ctx context.Context, id int64, u master.Usage) error {
	if f.SettleSpendFunc == nil {
		return nil
	}
	return f.SettleSpendFunc(ctx, id, u)
}

func (f *fakeStore) ToolCalls(ctx context.Context, taskID int64) ([]master.CallRecord, error) {
	if f.ToolCallsFunc == nil {
		return nil, nil
	}
	return f.ToolCallsFunc(ctx, taskID)
}

func (f *fakeStore) PlanToolCalls(ctx context.Context, taskID int64, attempt, step int, calls []master.PlannedCall) ([]master.CallRecord, error) {
	if f.PlanToolCallsFunc == nil {
		return nil, nil
	}
	return f.PlanToolCallsFunc(ctx, taskID, attempt, step, calls)
}

func (f *fakeStore) StartToolCall(ctx context.Context, taskID int64, attempt, seq int) error {
	if f.StartToolCallFunc == nil {
		return nil
	}
	return f.StartToolCallFunc(ctx, taskID, attempt, seq)
}

func (f *fakeStore) RecordToolCall(ctx context.Context, taskID int64, attempt, seq int, res master.ToolResult) error {
	if f.RecordToolCallFunc == nil {
		return nil
	}
	return f.RecordToolCallFunc(ctx, taskID, attempt, seq, res)
}

func (f *fakeStore) PauseForApproval(ctx context.Context, taskID int64, attempt, seq int, ask master.ApprovalAsk) (int64, error) {
	f.approvers = ask.Approvers
	if f.PauseForApprovalFunc == nil {
		return 0, nil
	}
	return f.PauseForApprovalFunc(ctx, taskID, attempt, seq, ask.Timeout)
}

// fakeLLM is a master.LLM calling ChatFunc.
type fakeLLM struct {
	ChatFunc func(ctx context.Context, req master.ChatRequest) (master.ChatResponse, error)
}

func (f *fakeLLM) Chat(ctx context.Context, req master.ChatRequest) (master.ChatResponse, error) {
	return f.ChatFunc(ctx, req)
}

// answer is one scripted model answer.
type answer struct {
	resp master.ChatResponse
	err  error
}

// scripted is a fake LLM that gives its answers in order and records the
// requests it got (with their messages copied).
type scripted struct {
	mu      sync.Mutex
	answers []answer
	reqs    []master.ChatRequest
}

func (s *scripted) llm(t *testing.T) *fakeLLM {
	return &fakeLLM{ChatFunc: func(ctx context.Context, req master.ChatRequest) (master.ChatResponse, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		req.Messages = slices.Clone(req.Messages)
		s.reqs = append(s.reqs, req)
		if len(s.reqs) > len(s.answers) {
			t.Errorf("model called %d times, the script has %d answers", len(s.reqs), len(s.answers))
			return master.ChatResponse{}, context.Canceled
		}
		a := s.answers[len(s.reqs)-1]
		return a.resp, a.err
	}}
}

func (s *scripted) requests() []master.ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs)
}

// call is a model answer that makes one tool call.
func call(id, name, args string, usage master.Usage) answer {
	return answer{resp: master.ChatResponse{ToolCalls: []master.ToolCall{{ID: id, Name: name, Arguments: args}}, Usage: usage}}
}

// text is a model answer without a tool call.
func text(s string, usage master.Usage) answer {
	return answer{resp: master.ChatResponse{Content: s, Usage: usage}}
}

// recorder is a concurrency-safe list of what the pool wrote.
type recorder[T any] struct {
	mu    sync.Mutex
	items []T
}

func (r *recorder[T]) add(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, v)
}

func (r *recorder[T]) all() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.items)
}

type completion struct {
	taskID  int64
	attempt int
	out     master.Outcome
	ctxErr  error // the write context's error when it was made
}

type release struct {
	taskID  int64
	attempt int
	ctxErr  error
}

type progressCall struct {
	taskID  int64
	percent int
	note    string
}

// levels is a slog handler that remembers the level of every record.
type levels struct {
	mu   sync.Mutex
	seen []slog.Level
}

func (l *levels) Enabled(context.Context, slog.Level) bool { return true }
func (l *levels) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, r.Level)
	return nil
}
func (l *levels) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *levels) WithGroup(string) slog.Handler      { return l }

func (l *levels) max() slog.Level {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := slog.LevelDebug
	for _, v := range l.seen {
		m = max(m, v)
	}
	return m
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// wait receives from ch, failing the test if nothing comes: a bound on a
// broken test, not a synchronisation.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// runTaskNow runs one task synchronously, as the pool would after
// claiming it, under ctx.
func runTaskNow(ctx context.Context, p *Pool, t master.Task) {
	tctx, cancel := context.WithCancelCause(ctx)
	r := &running{task: t, ctx: tctx, cancel: cancel}
	p.mu.Lock()
	p.running[t.ID] = r
	p.mu.Unlock()
	// The lease keeper runs beside the task, as in Run.
	kctx, stopKeeper := context.WithCancel(ctx)
	var keeper sync.WaitGroup
	keeper.Go(func() { p.keepLeases(kctx) })
	p.runTask(ctx, r, func() {})
	p.unregister(r)
	stopKeeper()
	keeper.Wait()
}

// started runs p until the test ends, and returns a function that stops
// it and waits for Run to return.
func started(t *testing.T, p *Pool) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = wait(t, done, "Run to return")
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// queue is a ClaimTasksFunc serving tasks in order, at most n per claim.
func queue(tasks ...master.Task) func(context.Context, string, int, time.Duration) ([]master.Task, error) {
	var mu sync.Mutex
	return func(_ context.Context, _ string, n int, _ time.Duration) ([]master.Task, error) {
		mu.Lock()
		defer mu.Unlock()
		k := min(n, len(tasks))
		out := slices.Clone(tasks[:k])
		tasks = tasks[k:]
		return out, nil
	}
}
