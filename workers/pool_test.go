package workers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

func TestShutdownReleasesInFlightTask(t *testing.T) {
	t.Parallel()
	w := newTaskWorld()
	w.store.ClaimTasksFunc = queue(researchTask)
	inCall, cancelled, letGo := make(chan struct{}, 1), make(chan error, 1), make(chan struct{})
	llm := &fakeLLM{ChatFunc: func(ctx context.Context, _ master.ChatRequest) (master.ChatResponse, error) {
		inCall <- struct{}{}
		<-ctx.Done()
		cancelled <- ctx.Err()
		<-letGo // the task's goroutine lingers until the test lets it go
		return master.ChatResponse{}, ctx.Err()
	}}
	p := New(Config{ID: "w1", Slots: 1, Poll: time.Millisecond, SweepEvery: -1}, w.store, llm, discard())
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- p.Run(ctx) }()

	wait(t, inCall, "the model call")
	cancel()
	if err := wait(t, cancelled, "the model call to be cancelled"); !errors.Is(err, context.Canceled) {
		t.Errorf("model call ended with %v, want context.Canceled", err)
	}
	select {
	case <-runDone:
		t.Fatal("Run returned while a task's goroutine was still running")
	default:
	}
	close(letGo)
	if err := wait(t, runDone, "Run to return"); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	want := []release{{taskID: researchTask.ID, attempt: researchTask.Attempt}}
	if got := w.released.all(); !slices.Equal(got, want) {
		t.Errorf("releases %+v, want %+v (with a live context)", got, want)
	}
	if c := w.completed.all(); len(c) > 0 {
		t.Errorf("completions %+v, want none", c)
	}
}

func TestClaimsNeverExceedFreeSlots(t *testing.T) {
	t.Parallel()
	const slots, total = 2, 5
	var tasks []master.Task
	for i := range total {
		tasks = append(tasks, master.Task{ID: int64(i + 1), SessionID: 1, Role: "researcher", Instruction: fmt.Sprint("task ", i+1), Attempt: 1})
	}
	serve := queue(tasks...)
	// A slot is free once its task's outcome is in hand (answered, below:
	// the model call has returned), while the outcome is being written;
	// a claimed task never waits for a slot, and at most one outcome per
	// slot is being written.
	var mu sync.Mutex
	claimed, answered, completed, active, peak := 0, 0, 0, 0, 0
	var violations recorder[string]
	done := make(chan int64, total)
	store := &fakeStore{
		ClaimTasksFunc: func(ctx context.Context, id string, n int, lease time.Duration) ([]master.Task, error) {
			mu.Lock()
			if inFlight := claimed - answered; n+inFlight > slots {
				violations.add(fmt.Sprintf("asked for %d with %d in flight", n, inFlight))
			}
			if unwritten := claimed - completed; n+unwritten > 2*slots {
				violations.add(fmt.Sprintf("asked for %d with %d outcomes unwritten", n, unwritten))
			}
			mu.Unlock()
			got, err := serve(ctx, id, n, lease)
			mu.Lock()
			claimed += len(got)
			mu.Unlock()
			return got, err
		},
		CompleteTaskFunc: func(_ context.Context, id int64, _ int, _ master.Outcome) (master.Task, error) {
			mu.Lock()
			completed++
			mu.Unlock()
			done <- id
			return master.Task{}, nil
		},
	}
	inCall, gate := make(chan struct{}, total), make(chan struct{})
	llm := &fakeLLM{ChatFunc: func(ctx context.Context, _ master.ChatRequest) (master.ChatResponse, error) {
		mu.Lock()
		active++
		peak = max(peak, active)
		mu.Unlock()
		defer func() {
			mu.Lock()
			active--
			answered++
			mu.Unlock()
		}()
		inCall <- struct{}{}
		select {
		case <-gate:
			return master.ChatResponse{Content: "ok"}, nil
		case <-ctx.Done():
			return master.ChatResponse{}, ctx.Err()
		}
	}}
	p := New(Config{ID: "w1", Slots: slots, Poll: time.Millisecond, SweepEvery: -1}, store, llm, discard())
	stop := started(t, p)

	wait(t, inCall, "the first model call")
	wait(t, inCall, "the second model call")
	var ended []int64
	for range total {
		select {
		case gate <- struct{}{}:
		case <-time.After(10 * time.Second):
			t.Fatal("timed out waiting for a model call to let go")
		}
		ended = append(ended, wait(t, done, "a task to complete"))
	}
	if err := stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	slices.Sort(ended)
	if !slices.Equal(ended, []int64{1, 2, 3, 4, 5}) {
		t.Errorf("completed tasks %v, want 1 to 5 once each", ended)
	}
	if peak != slots {
		t.Errorf("at most %d model calls at once, want %d", peak, slots)
	}
	if v := violations.all(); len(v) > 0 {
		t.Errorf("claims beyond the free slots: %v", v)
	}
}

func TestCancelSession(t *testing.T) {
	t.Parallel()
	w := newTaskWorld()
	w.store.ClaimTasksFunc = queue(
		master.Task{ID: 1, SessionID: 1, Role: "researcher", Instruction: "one", Attempt: 1},
		master.Task{ID: 2, SessionID: 2, Role: "researcher", Instruction: "two", Attempt: 1},
	)
	completed := make(chan int64, 2)
	complete := w.store.CompleteTaskFunc
	w.store.CompleteTaskFunc = func(ctx context.Context, id int64, attempt int, out master.Outcome) (master.Task, error) {
		defer func() { completed <- id }()
		return complete(ctx, id, attempt, out)
	}
	started1, started2, cause1, finish2 := make(chan struct{}, 1), make(chan struct{}, 1), make(chan error, 1), make(chan struct{})
	llm := &fakeLLM{ChatFunc: func(ctx context.Context, req master.ChatRequest) (master.ChatResponse, error) {
		if req.Messages[1].Content == "one" {
			started1 <- struct{}{}
			<-ctx.Done()
			cause1 <- context.Cause(ctx)
			return master.ChatResponse{}, ctx.Err()
		}
		started2 <- struct{}{}
		select {
		case <-finish2:
			return master.ChatResponse{Content: "two done"}, nil
		case <-ctx.Done():
			return master.ChatResponse{}, ctx.Err()
		}
	}}
	p := New(Config{ID: "w1", Slots: 2, Poll: time.Millisecond, SweepEvery: -1}, w.store, llm, discard())
	stop := started(t, p)

	wait(t, started1, "session 1's model call")
	wait(t, started2, "session 2's model call")
	if n := p.CancelSession(1); n != 1 {
		t.Errorf("CancelSession stopped %d tasks, want 1", n)
	}
	if err := wait(t, cause1, "session 1's call to be cancelled"); !errors.Is(err, errSessionCancelled) {
		t.Errorf("session 1's call cancelled by %v, want %v", err, errSessionCancelled)
	}
	close(finish2)
	if id := wait(t, completed, "session 2's task to complete"); id != 2 {
		t.Errorf("completed task %d, want 2", id)
	}
	if err := stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	got := w.completed.all()
	if len(got) != 1 || got[0].out.State != master.TaskDone || got[0].out.Result != "two done" {
		t.Errorf("completions %+v, want only task 2 done", got)
	}
	if r := w.released.all(); len(r) > 0 {
		t.Errorf("releases %+v, want none: a cancelled task is not put back", r)
	}
}

func TestWakeChecksLeaseAtOnce(t *testing.T) {
	t.Parallel()
	w := newTaskWorld()
	w.store.ClaimTasksFunc = queue(master.Task{ID: 3, SessionID: 7, Role: "researcher", Instruction: "x", Attempt: 1})
	beats := make(chan int64, 4)
	w.store.StaleTasksFunc = func(_ context.Context, refs []master.TaskRef) ([]int64, error) {
		for _, r := range refs {
			beats <- r.ID
		}
		return []int64{3}, nil // cancelled by another process
	}
	llm, inCall, ended := blockingLLM()
	wake := make(chan string, 1)
	p := New(Config{ID: "w1", Lease: time.Hour, Heartbeat: 30 * time.Minute, Poll: time.Millisecond, SweepEvery: -1, Wake: wake},
		w.store, llm, discard())
	stop := started(t, p)

	wait(t, inCall, "the model call")
	wake <- "7"
	if id := wait(t, beats, "a check"); id != 3 {
		t.Errorf("check for task %d, want 3", id)
	}
	if cause := wait(t, ended, "the model call to be cancelled"); !errors.Is(cause, master.ErrStale) {
		t.Errorf("model call cancelled by %v, want a stale lease", cause)
	}
	if err := stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	w.nothingWritten(t)
}

func TestCheckRunning(t *testing.T) {
	t.Parallel()
	tests := []struct {
		hint string
		want bool // a check of the running tasks is asked for
	}{
		{hint: "7", want: true},
		{hint: "8", want: true},
		{hint: "9", want: false},
		{hint: "*", want: true},
		{hint: "", want: true},
	}
	for _, tt := range tests {
		p := New(Config{ID: "w1", SweepEvery: -1}, &fakeStore{}, &fakeLLM{}, discard())
		for _, task := range []master.Task{{ID: 1, SessionID: 7}, {ID: 2, SessionID: 7}, {ID: 3, SessionID: 8}} {
			p.running[task.ID] = &running{task: task}
		}
		p.checkRunning(tt.hint)
		p.checkRunning(tt.hint) // coalesces, never blocks
		if got := len(p.checkNow) > 0; got != tt.want {
			t.Errorf("hint %q asked for a check: %v, want %v", tt.hint, got, tt.want)
		}
	}
}

func TestClaimErrorIsRetried(t *testing.T) {
	t.Parallel()
	w := newTaskWorld()
	serve := queue(researchTask)
	var claims atomic.Int32
	w.store.ClaimTasksFunc = func(ctx context.Context, id string, n int, lease time.Duration) ([]master.Task, error) {
		if claims.Add(1) <= 2 {
			return nil, errors.New("claim tasks: connection refused")
		}
		return serve(ctx, id, n, lease)
	}
	completed := make(chan struct{}, 1)
	w.store.CompleteTaskFunc = func(context.Context, int64, int, master.Outcome) (master.Task, error) {
		completed <- struct{}{}
		return master.Task{}, nil
	}
	wake := make(chan string)
	close(wake) // a closed wake channel leaves the poll
	s := &scripted{answers: []answer{text("ok", master.Usage{})}}
	p := New(Config{ID: "w1", Poll: time.Millisecond, SweepEvery: -1, Wake: wake}, w.store, s.llm(t), discard())
	stop := started(t, p)

	wait(t, completed, "the task to complete after failed claims")
	if err := stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	if n := claims.Load(); n < 3 {
		t.Errorf("%d claims, want at least 3", n)
	}
}

func TestSweeper(t *testing.T) {
	t.Parallel()
	sweeps := make(chan bool, 8)
	store := &fakeStore{SweepExpiredFunc: func(ctx context.Context) (int, int, error) {
		_, hasDeadline := ctx.Deadline()
		select {
		case sweeps <- hasDeadline:
		default:
		}
		return 1, 1, nil
	}}
	p := New(Config{ID: "w1", SweepEvery: time.Millisecond}, store, &fakeLLM{}, discard())
	stop := started(t, p)
	for range 2 {
		if !wait(t, sweeps, "a sweep") {
			t.Error("sweep called without a deadline")
		}
	}
	if err := stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
}

func TestSweeperDisabled(t *testing.T) {
	t.Parallel()
	claims := make(chan struct{}, 1)
	var swept atomic.Bool
	store := &fakeStore{
		ClaimTasksFunc: func(context.Context, string, int, time.Duration) ([]master.Task, error) {
			select {
			case claims <- struct{}{}:
			default:
			}
			return nil, nil
		},
		SweepExpiredFunc: func(context.Context) (int, int, error) {
			swept.Store(true)
			return 0, 0, nil
		},
	}
	p := New(Config{ID: "w1", Poll: time.Millisecond, SweepEvery: -1}, store, &fakeLLM{}, discard())
	stop := started(t, p)
	wait(t, claims, "a claim")
	wait(t, claims, "another claim")
	if err := stop(); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
	if swept.Load() {
		t.Error("sweeper ran with SweepEvery < 0")
	}
}

func TestRunTwice(t *testing.T) {
	t.Parallel()
	claimed := make(chan struct{}, 1)
	store := &fakeStore{ClaimTasksFunc: func(context.Context, string, int, time.Duration) ([]master.Task, error) {
		select {
		case claimed <- struct{}{}:
		default:
		}
		return nil, nil
	}}
	p := New(Config{ID: "w1", SweepEvery: -1}, store, &fakeLLM{}, discard())
	started(t, p)
	wait(t, claimed, "the first claim")
	if err := p.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "called twice") {
		t.Errorf("second Run returned %v, want a called-twice error", err)
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   Config
		want Config // ID is checked separately
	}{
		{name: "zero", in: Config{},
			want: Config{Slots: 16, Lease: 30 * time.Second, Heartbeat: 10 * time.Second, Poll: 2 * time.Second,
				SweepEvery: time.Second, TaskTimeout: 5 * time.Minute, MaxSteps: 8, ApprovalTimeout: time.Hour}},
		{name: "heartbeat not below lease", in: Config{Lease: 6 * time.Second, Heartbeat: 6 * time.Second},
			want: Config{Slots: 16, Lease: 6 * time.Second, Heartbeat: 2 * time.Second, Poll: 2 * time.Second,
				SweepEvery: time.Second, TaskTimeout: 5 * time.Minute, MaxSteps: 8, ApprovalTimeout: time.Hour}},
		{name: "kept", in: Config{ID: "me", Slots: 1, Lease: time.Minute, Heartbeat: time.Second, Poll: time.Second,
			SweepEvery: -1, TaskTimeout: time.Hour, MaxSteps: 3, WorkerModel: "m", ApprovalTimeout: time.Minute},
			want: Config{ID: "me", Slots: 1, Lease: time.Minute, Heartbeat: time.Second, Poll: time.Second,
				SweepEvery: -1, TaskTimeout: time.Hour, MaxSteps: 3, WorkerModel: "m", ApprovalTimeout: time.Minute}},
	}
	for _, tt := range tests {
		got := tt.in.withDefaults()
		if got.ID == "" {
			t.Errorf("%s: empty worker id", tt.name)
		}
		if tt.want.ID == "" {
			got.ID = ""
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
