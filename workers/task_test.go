package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// taskWorld is one pool with recording fakes, for running single tasks.
type taskWorld struct {
	store     *fakeStore
	completed recorder[completion]
	released  recorder[release]
	progress  recorder[progressCall]
}

func newTaskWorld() *taskWorld {
	w := &taskWorld{}
	w.store = &fakeStore{
		CompleteTaskFunc: func(ctx context.Context, id int64, attempt int, out master.Outcome) (master.Task, error) {
			w.completed.add(completion{id, attempt, out, ctx.Err()})
			return master.Task{ID: id}, nil
		},
		ReleaseTaskFunc: func(ctx context.Context, id int64, attempt int) error {
			w.released.add(release{id, attempt, ctx.Err()})
			return nil
		},
		ProgressFunc: func(_ context.Context, id int64, _ int, percent int, note string) error {
			w.progress.add(progressCall{id, percent, note})
			return nil
		},
	}
	return w
}

// only returns the one completion written, failing the test otherwise.
func (w *taskWorld) only(t *testing.T) master.Outcome {
	t.Helper()
	got := w.completed.all()
	if len(got) != 1 {
		t.Fatalf("got %d completions, want 1: %+v", len(got), got)
	}
	if got[0].ctxErr != nil {
		t.Errorf("completion written with a done context: %v", got[0].ctxErr)
	}
	return got[0].out
}

// nothingWritten fails the test if the task was completed or released.
func (w *taskWorld) nothingWritten(t *testing.T) {
	t.Helper()
	if c := w.completed.all(); len(c) > 0 {
		t.Errorf("got completions %+v, want none", c)
	}
	if r := w.released.all(); len(r) > 0 {
		t.Errorf("got releases %+v, want none", r)
	}
}

var researchTask = master.Task{ID: 1, SessionID: 9, Role: "researcher", Instruction: "Find X.", Attempt: 2}

func TestTaskOutcomes(t *testing.T) {
	t.Parallel()
	u := func(p, c int64) master.Usage { return master.Usage{PromptTokens: p, CompletionTokens: c} }
	done := `{"status":"done","result":"X is 42."}`
	tests := []struct {
		name     string
		maxSteps int
		answers  []answer
		want     master.Outcome // Error is a substring
		progress []progressCall
		check    func(t *testing.T, reqs []master.ChatRequest)
	}{
		{name: "report done",
			answers: []answer{call("c1", ToolReport, done, u(10, 5))},
			want:    master.Outcome{State: master.TaskDone, Result: "X is 42.", Usage: u(10, 5)}},
		{name: "text only counts as done",
			answers: []answer{text("  X is 42.\n", u(3, 4))},
			want:    master.Outcome{State: master.TaskDone, Result: "X is 42.", Usage: u(3, 4)}},
		{name: "blocked",
			answers: []answer{call("c1", ToolReport, `{"status":"blocked","result":"no access"}`, u(1, 1))},
			want:    master.Outcome{State: master.TaskBlocked, Result: "no access", Usage: u(1, 1)}},
		{name: "need_info asks its question",
			answers: []answer{call("c1", ToolReport, `{"status":"need_info","result":"","question":"Which X?"}`, u(1, 1))},
			want:    master.Outcome{State: master.TaskNeedInfo, Question: "Which X?", Usage: u(1, 1)}},
		{name: "progress is recorded, then report; usage summed",
			answers: []answer{
				call("p1", ToolProgress, `{"percent":30,"note":"reading"}`, u(10, 2)),
				call("c2", ToolReport, done, u(20, 3)),
			},
			want:     master.Outcome{State: master.TaskDone, Result: "X is 42.", Usage: u(30, 5)},
			progress: []progressCall{{1, 30, "reading"}},
			check: func(t *testing.T, reqs []master.ChatRequest) {
				last := reqs[1].Messages[len(reqs[1].Messages)-1]
				if last.Role != master.RoleTool || last.ToolCallID != "p1" || last.Content != "noted" {
					t.Errorf("second call ends with %+v, want the tool answer \"noted\" to p1", last)
				}
			}},
		{name: "malformed report retried once with the error",
			answers: []answer{
				call("c1", ToolReport, `{"status":"finished","result":"x"}`, u(1, 1)),
				call("c2", ToolReport, done, u(1, 1)),
			},
			want: master.Outcome{State: master.TaskDone, Result: "X is 42.", Usage: u(2, 2)},
			check: func(t *testing.T, reqs []master.ChatRequest) {
				msgs := reqs[1].Messages
				asked, told := msgs[len(msgs)-2], msgs[len(msgs)-1]
				if asked.Role != master.RoleAssistant || len(asked.ToolCalls) != 1 || asked.ToolCalls[0].ID != "c1" {
					t.Errorf("retry holds %+v before the error, want the assistant's call c1", asked)
				}
				if told.Role != master.RoleTool || told.ToolCallID != "c1" || !strings.Contains(told.Content, `"status" is "finished"`) {
					t.Errorf("retry ends with %+v, want a tool message to c1 with the validation error", told)
				}
			}},
		{name: "malformed twice fails",
			answers: []answer{
				call("c1", ToolReport, `{"status":"done"}`, u(1, 1)),
				call("c2", ToolReport, `not json`, u(1, 1)),
			},
			want: master.Outcome{State: master.TaskFailed, Error: "invalid report: arguments are not valid JSON", Usage: u(2, 2)}},
		{name: "unknown tool is malformed",
			answers: []answer{
				call("c1", "web_search", `{"q":"x"}`, u(1, 1)),
				call("c2", ToolReport, done, u(1, 1)),
			},
			want: master.Outcome{State: master.TaskDone, Result: "X is 42.", Usage: u(2, 2)},
			check: func(t *testing.T, reqs []master.ChatRequest) {
				last := reqs[1].Messages[len(reqs[1].Messages)-1]
				if last.ToolCallID != "c1" || !strings.Contains(last.Content, `no tool "web_search"`) {
					t.Errorf("retry ends with %+v, want the unknown-tool error for c1", last)
				}
			}},
		{name: "unknown tool then malformed report fails",
			answers: []answer{
				call("c1", "web_search", `{}`, u(1, 1)),
				call("c2", ToolReport, `{"status":"done","result":""}`, u(1, 1)),
			},
			want: master.Outcome{State: master.TaskFailed, Error: `invalid report: "result" is empty`, Usage: u(2, 2)}},
		{name: "malformed progress does not use the retry",
			answers: []answer{
				call("p1", ToolProgress, `{"percent":200,"note":"x"}`, u(1, 1)),
				call("c2", ToolReport, `{}`, u(1, 1)),
				call("c3", ToolReport, done, u(1, 1)),
			},
			want: master.Outcome{State: master.TaskDone, Result: "X is 42.", Usage: u(3, 3)},
			check: func(t *testing.T, reqs []master.ChatRequest) {
				last := reqs[1].Messages[len(reqs[1].Messages)-1]
				if last.ToolCallID != "p1" || !strings.Contains(last.Content, `"percent" is 200`) {
					t.Errorf("second call ends with %+v, want the progress error for p1", last)
				}
			}},
		{name: "empty answer is retried",
			answers: []answer{text(" ", u(1, 0)), text("X is 42.", u(1, 1))},
			want:    master.Outcome{State: master.TaskDone, Result: "X is 42.", Usage: u(2, 1)}},
		{name: "progress and report in one answer",
			answers: []answer{{resp: master.ChatResponse{Usage: u(5, 5), ToolCalls: []master.ToolCall{
				{ID: "p1", Name: ToolProgress, Arguments: `{"percent":90,"note":"wrapping up"}`},
				{ID: "c1", Name: ToolReport, Arguments: done},
			}}}},
			want:     master.Outcome{State: master.TaskDone, Result: "X is 42.", Usage: u(5, 5)},
			progress: []progressCall{{1, 90, "wrapping up"}}},
		{name: "model error fails",
			answers: []answer{
				call("p1", ToolProgress, `{"percent":10,"note":"x"}`, u(4, 4)),
				{err: errors.New("status 500: overloaded")},
			},
			want:     master.Outcome{State: master.TaskFailed, Error: "model error: status 500: overloaded", Usage: u(4, 4)},
			progress: []progressCall{{1, 10, "x"}}},
		{name: "max steps",
			maxSteps: 3,
			answers: []answer{
				call("p1", ToolProgress, `{"percent":10,"note":"a"}`, u(1, 1)),
				call("p2", ToolProgress, `{"percent":20,"note":"b"}`, u(1, 1)),
				call("p3", ToolProgress, `{"percent":30,"note":"c"}`, u(1, 1)),
			},
			want:     master.Outcome{State: master.TaskFailed, Error: "no report after 3 model calls", Usage: u(3, 3)},
			progress: []progressCall{{1, 10, "a"}, {1, 20, "b"}, {1, 30, "c"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newTaskWorld()
			s := &scripted{answers: tt.answers}
			p := New(Config{ID: "w1", MaxSteps: tt.maxSteps, SweepEvery: -1}, w.store, s.llm(t), discard())
			runTaskNow(context.Background(), p, researchTask)

			got := w.only(t)
			if got.State != tt.want.State || got.Result != tt.want.Result || got.Usage != tt.want.Usage ||
				!strings.Contains(got.Error, tt.want.Error) || (tt.want.Error == "") != (got.Error == "") {
				t.Errorf("outcome %+v, want %+v", got, tt.want)
			}
			if c := w.completed.all()[0]; c.taskID != researchTask.ID || c.attempt != researchTask.Attempt {
				t.Errorf("completed task %d attempt %d, want %d attempt %d", c.taskID, c.attempt, researchTask.ID, researchTask.Attempt)
			}
			if reqs := s.requests(); len(reqs) != len(tt.answers) {
				t.Errorf("model called %d times, want %d", len(reqs), len(tt.answers))
			} else if tt.check != nil {
				tt.check(t, reqs)
			}
			if got, want := fmt.Sprint(w.progress.all()), fmt.Sprint(tt.progress); got != want {
				t.Errorf("progress %s, want %s", got, want)
			}
		})
	}
}

// No model call starts for a session past its budget: each call's worst
// case is held first, and a refused hold ends the task failed with what it
// used, so its round still ends. Every call is settled with its own usage
// as it returns, on the task's hold.
func TestTaskStopsAtTheBudget(t *testing.T) {
	t.Parallel()
	u := func(p, c int64) master.Usage { return master.Usage{PromptTokens: p, CompletionTokens: c} }
	progress := func(id string) answer { return call(id, ToolProgress, `{"percent":10,"note":"x"}`, u(10, 5)) }
	tests := []struct {
		name    string
		hold    func(charged int64) error // charged: settled so far
		answers []answer
		want    master.Outcome
	}{
		{name: "spent before the task: no call",
			hold: func(int64) error { return &master.BudgetError{Limit: 100, Used: 100} },
			want: master.Outcome{State: master.TaskFailed, Error: "stopped: team budget of 100 tokens spent"}},
		{name: "crossed by the task's own calls",
			hold: func(charged int64) error {
				if charged >= 20 {
					return &master.BudgetError{Limit: 20, Used: charged}
				}
				return nil
			},
			answers: []answer{progress("p1"), progress("p2")},
			want:    master.Outcome{State: master.TaskFailed, Error: "stopped: team budget of 20 tokens spent (30 used)", Usage: u(20, 10)}},
		{name: "a budget that cannot be checked stops the task too",
			hold: func(int64) error { return errors.New("database away") },
			want: master.Outcome{State: master.TaskFailed, Error: "could not hold the model call's tokens against the budget: database away"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newTaskWorld()
			var mu sync.Mutex
			var charged int64
			var settled []master.Usage
			w.store.HoldSpendFunc = func(_ context.Context, h master.Hold) error {
				if h.SessionID != researchTask.SessionID || h.TaskID != researchTask.ID || h.Owner != "w1" {
					t.Errorf("held for session %d task %d owner %q, want %d, %d, w1", h.SessionID, h.TaskID, h.Owner, researchTask.SessionID, researchTask.ID)
				}
				if h.CompletionTokens != master.DefaultMaxOutput || h.PromptTokens <= 0 {
					t.Errorf("held %d+%d, want the prompt's worst case and the default max output", h.PromptTokens, h.CompletionTokens)
				}
				mu.Lock()
				defer mu.Unlock()
				return tt.hold(charged)
			}
			w.store.SettleSpendFunc = func(_ context.Context, _ int64, u master.Usage) error {
				mu.Lock()
				defer mu.Unlock()
				charged += u.Total()
				settled = append(settled, u)
				return nil
			}
			s := &scripted{answers: tt.answers}
			p := New(Config{ID: "w1", SweepEvery: -1}, w.store, s.llm(t), discard())
			runTaskNow(context.Background(), p, researchTask)
			got := w.only(t)
			if got.State != tt.want.State || got.Usage != tt.want.Usage || !strings.Contains(got.Error, tt.want.Error) {
				t.Errorf("outcome %+v, want %+v", got, tt.want)
			}
			if n := len(s.requests()); n != len(tt.answers) {
				t.Errorf("model called %d times, want %d", n, len(tt.answers))
			}
			if len(settled) != len(tt.answers) {
				t.Errorf("settled %d calls, want each of the %d made", len(settled), len(tt.answers))
			}
		})
	}
}

// A task dropped mid-way (its lease lost, its session dissolved, the pool
// shutting down) writes no outcome, but every model call it made was
// charged as it returned: nothing it spent escapes the budgets.
func TestDroppedTaskHasPaidForItsCalls(t *testing.T) {
	t.Parallel()
	for _, cause := range []error{master.ErrStale, errSessionCancelled, context.Canceled} {
		t.Run(cause.Error(), func(t *testing.T) {
			t.Parallel()
			w := newTaskWorld()
			var mu sync.Mutex
			var charged master.Usage
			w.store.SettleSpendFunc = func(_ context.Context, _ int64, u master.Usage) error {
				mu.Lock()
				defer mu.Unlock()
				charged = charged.Add(u)
				return nil
			}
			var r *running
			calls := 0
			llm := &fakeLLM{ChatFunc: func(ctx context.Context, req master.ChatRequest) (master.ChatResponse, error) {
				calls++
				if calls == 3 {
					r.cancel(cause) // dropped while its third call is in flight
					<-ctx.Done()
					return master.ChatResponse{Usage: master.Usage{PromptTokens: 7}}, ctx.Err()
				}
				return master.ChatResponse{Usage: master.Usage{PromptTokens: 100, CompletionTokens: 200},
					ToolCalls: []master.ToolCall{{ID: fmt.Sprint("p", calls), Name: ToolProgress, Arguments: `{"percent":1,"note":"x"}`}}}, nil
			}}
			p := New(Config{ID: "w1", SweepEvery: -1}, w.store, llm, discard())
			tctx, cancel := context.WithCancelCause(context.Background())
			r = &running{task: researchTask, ctx: tctx, cancel: cancel}
			p.runTask(context.Background(), r, func() {})
			if c := w.completed.all(); len(c) > 0 {
				t.Errorf("a dropped task wrote %+v", c)
			}
			if charged.Total() != 607 {
				t.Errorf("charged %+v, want the 607 tokens of the three calls made", charged)
			}
		})
	}
}

func TestTaskRequest(t *testing.T) {
	t.Parallel()
	temp := float32(0.2)
	tests := []struct {
		name      string
		role      master.Role
		wantModel string
		wantMax   int // max_tokens: the role's, else the bound every call has
	}{
		{name: "role model", role: master.Role{Name: "researcher", Model: "big", Temperature: &temp, MaxTokens: 900}, wantModel: "big", wantMax: 900},
		{name: "worker model", role: master.Role{Name: "researcher"}, wantModel: "default-worker", wantMax: master.DefaultMaxOutput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newTaskWorld()
			w.store.TaskInputFunc = func(context.Context, master.Task) (TaskInput, error) {
				return TaskInput{Goal: "g", Role: tt.role}, nil
			}
			s := &scripted{answers: []answer{text("ok", master.Usage{})}}
			p := New(Config{ID: "w1", WorkerModel: "default-worker", SweepEvery: -1}, w.store, s.llm(t), discard())
			runTaskNow(context.Background(), p, researchTask)

			req := s.requests()[0]
			if req.Model != tt.wantModel || req.Temperature != tt.role.Temperature || req.MaxTokens != tt.wantMax {
				t.Errorf("request model %q, temperature %v, max tokens %d; want %q, %v, %d",
					req.Model, req.Temperature, req.MaxTokens, tt.wantModel, tt.role.Temperature, tt.wantMax)
			}
			if req.ToolChoice != "auto" || len(req.Tools) != 2 || req.Tools[0].Name != ToolReport || req.Tools[1].Name != ToolProgress {
				t.Errorf("request tool choice %q, tools %v; want auto with report and progress", req.ToolChoice, req.Tools)
			}
			if len(req.Messages) != 2 || req.Messages[0].Role != master.RoleSystem || req.Messages[1].Role != master.RoleUser ||
				req.Messages[1].Content != researchTask.Instruction {
				t.Errorf("request messages %+v, want the system prompt and the instruction", req.Messages)
			}
		})
	}
}

func TestTaskDependenciesReachTheModel(t *testing.T) {
	t.Parallel()
	w := newTaskWorld()
	w.store.TaskInputFunc = func(_ context.Context, task master.Task) (TaskInput, error) {
		return TaskInput{Goal: "Launch", Role: master.Role{Name: "writer", Prompt: "You write."},
			Deps: []master.Task{{ID: 4, Role: "researcher", State: master.TaskDone, Result: "Features: A, B."}}}, nil
	}
	s := &scripted{answers: []answer{text("ok", master.Usage{})}}
	p := New(Config{ID: "w1", SweepEvery: -1}, w.store, s.llm(t), discard())
	runTaskNow(context.Background(), p, master.Task{ID: 5, Role: "writer", Instruction: "Announce it."})

	msgs := s.requests()[0].Messages
	if !strings.HasPrefix(msgs[0].Content, "You are the writer of a team working on: Launch\n\nYou write.") {
		t.Errorf("system prompt %q does not start with the role, the goal and the role's prompt", msgs[0].Content)
	}
	if want := "### researcher (task #4)\nFeatures: A, B."; !strings.HasPrefix(msgs[1].Content, "Announce it.") || !strings.Contains(msgs[1].Content, want) {
		t.Errorf("user message %q lacks the instruction or %q", msgs[1].Content, want)
	}
}

func TestTaskTimeout(t *testing.T) {
	t.Parallel()
	w := newTaskWorld()
	w.store.TaskInputFunc = func(context.Context, master.Task) (TaskInput, error) {
		return TaskInput{Goal: "g", Role: master.Role{Name: "researcher", Timeout: 20 * time.Millisecond}}, nil
	}
	var callErr error
	llm := &fakeLLM{ChatFunc: func(ctx context.Context, _ master.ChatRequest) (master.ChatResponse, error) {
		<-ctx.Done()
		callErr = ctx.Err()
		return master.ChatResponse{}, ctx.Err()
	}}
	p := New(Config{ID: "w1", TaskTimeout: time.Hour, SweepEvery: -1}, w.store, llm, discard())
	runTaskNow(context.Background(), p, researchTask)

	if !errors.Is(callErr, context.DeadlineExceeded) {
		t.Errorf("model call ended with %v, want the deadline", callErr)
	}
	got := w.only(t)
	if want := (master.Outcome{State: master.TaskTimeout, Error: "timed out after 20ms"}); got != want {
		t.Errorf("outcome %+v, want %+v", got, want)
	}
	if r := w.released.all(); len(r) > 0 {
		t.Errorf("timed-out task released: %+v", r)
	}
}

func TestTaskTimeoutDefaultMessage(t *testing.T) {
	t.Parallel()
	if got := fmt.Sprintf("timed out after %s", DefaultTaskTimeout); got != "timed out after 5m0s" {
		t.Errorf("got %q, want %q", got, "timed out after 5m0s")
	}
}

// blockingLLM is a model whose calls block until their context ends; it
// reports each call's start and the context's error.
func blockingLLM() (llm *fakeLLM, started <-chan master.ChatRequest, ended <-chan error) {
	s, e := make(chan master.ChatRequest, 16), make(chan error, 16)
	return &fakeLLM{ChatFunc: func(ctx context.Context, req master.ChatRequest) (master.ChatResponse, error) {
		s <- req
		<-ctx.Done()
		e <- context.Cause(ctx)
		return master.ChatResponse{}, ctx.Err()
	}}, s, e
}

func TestTaskStopsWhenNoLongerOurs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		setup     func(s *fakeStore, started <-chan master.ChatRequest)
		wantCalls int // model calls, each cancelled by the stale lease
	}{
		{name: "lease stale", wantCalls: 1, setup: func(s *fakeStore, started <-chan master.ChatRequest) {
			var once sync.Once
			s.ExtendLeasesFunc = func(ctx context.Context, refs []master.TaskRef, _ time.Duration) ([]int64, error) {
				once.Do(func() { <-started }) // the model call is in flight
				return []int64{refs[0].ID}, nil
			}
		}},
		{name: "task input stale", setup: func(s *fakeStore, _ <-chan master.ChatRequest) {
			s.TaskInputFunc = func(context.Context, master.Task) (TaskInput, error) {
				return TaskInput{}, master.ErrStale
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newTaskWorld()
			started := make(chan master.ChatRequest, 1)
			var causes []error
			llm := &fakeLLM{ChatFunc: func(ctx context.Context, req master.ChatRequest) (master.ChatResponse, error) {
				started <- req
				<-ctx.Done()
				causes = append(causes, context.Cause(ctx))
				return master.ChatResponse{}, ctx.Err()
			}}
			tt.setup(w.store, started)
			p := New(Config{ID: "w1", Lease: time.Hour, Heartbeat: time.Millisecond, SweepEvery: -1}, w.store, llm, discard())
			runTaskNow(context.Background(), p, researchTask)

			if len(causes) != tt.wantCalls {
				t.Errorf("model called %d times, want %d", len(causes), tt.wantCalls)
			}
			for _, c := range causes {
				if !errors.Is(c, master.ErrStale) {
					t.Errorf("model call cancelled by %v, want a stale lease", c)
				}
			}
			w.nothingWritten(t)
		})
	}
}

func TestProgressStaleStopsTask(t *testing.T) {
	t.Parallel()
	w := newTaskWorld()
	w.store.ProgressFunc = func(context.Context, int64, int, int, string) error { return master.ErrStale }
	s := &scripted{answers: []answer{call("p1", ToolProgress, `{"percent":5,"note":"x"}`, master.Usage{})}}
	p := New(Config{ID: "w1", SweepEvery: -1}, w.store, s.llm(t), discard())
	runTaskNow(context.Background(), p, researchTask)

	if n := len(s.requests()); n != 1 {
		t.Errorf("model called %d times, want 1", n)
	}
	w.nothingWritten(t)
}

func TestCompleteStaleIsIgnored(t *testing.T) {
	t.Parallel()
	w := newTaskWorld()
	var completions recorder[master.Outcome]
	w.store.CompleteTaskFunc = func(_ context.Context, _ int64, _ int, out master.Outcome) (master.Task, error) {
		completions.add(out)
		return master.Task{}, fmt.Errorf("complete task 1: attempt 2: %w", master.ErrStale)
	}
	logs := &levels{}
	s := &scripted{answers: []answer{text("late result", master.Usage{})}}
	p := New(Config{ID: "w1", SweepEvery: -1}, w.store, s.llm(t), slog.New(logs))
	runTaskNow(context.Background(), p, researchTask)

	if n := len(completions.all()); n != 1 {
		t.Errorf("CompleteTask called %d times, want 1", n)
	}
	if r := w.released.all(); len(r) > 0 {
		t.Errorf("stale task released: %+v", r)
	}
	if l := logs.max(); l > slog.LevelInfo {
		t.Errorf("a stale completion logged at %v, want debug or info at most", l)
	}
}

func TestTaskInputError(t *testing.T) {
	t.Parallel()
	w := newTaskWorld()
	w.store.TaskInputFunc = func(context.Context, master.Task) (TaskInput, error) {
		return TaskInput{}, fmt.Errorf(`task input: role "chef" is not on the team: %w`, master.ErrNotFound)
	}
	llm := &fakeLLM{ChatFunc: func(context.Context, master.ChatRequest) (master.ChatResponse, error) {
		t.Error("model called without the task's input")
		return master.ChatResponse{}, nil
	}}
	p := New(Config{ID: "w1", SweepEvery: -1}, w.store, llm, discard())
	runTaskNow(context.Background(), p, researchTask)

	if got := w.only(t); got.State != master.TaskFailed || !strings.Contains(got.Error, `role "chef" is not on the team`) {
		t.Errorf("outcome %+v, want failed with the input error", got)
	}
}
