package store_test

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
)

func ref(tk master.Task) master.TaskRef { return master.TaskRef{ID: tk.ID, Attempt: tk.Attempt} }

func TestCompleteTasksGuardsEachAttempt(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s1, s2 := w.session(), w.session()
	_, ids1 := w.enqueue(s1, task("a", "1"), task("b", "2"), task("c", "3", 1))
	_, ids2 := w.enqueue(s2, task("d", "4"))
	claimed := w.claim("w", 10)
	if len(claimed) != 3 { // c waits for b
		t.Fatalf("claimed %d tasks, want 3", len(claimed))
	}
	byID := map[int64]master.Task{}
	for _, tk := range claimed {
		byID[tk.ID] = tk
	}
	a, b, d := byID[ids1[0]], byID[ids1[1]], byID[ids2[0]]
	stale := ref(d)
	stale.Attempt++ // a fencing token this worker never held
	errs := w.store.CompleteTasks(w.ctx, []master.Completion{
		{Task: ref(a), Outcome: master.Outcome{State: master.TaskDone, Result: "A", Usage: master.Usage{PromptTokens: 5, CompletionTokens: 1, Model: "m"}}},
		{Task: ref(b), Outcome: master.Outcome{State: master.TaskNeedInfo, Question: "which one?"}},
		{Task: stale, Outcome: master.Outcome{State: master.TaskDone, Result: "late"}},
		{Task: ref(a), Outcome: master.Outcome{State: master.TaskFailed, Error: "twice"}},
		{Task: ref(d), Outcome: master.Outcome{State: master.TaskCancelled}},
	})
	if len(errs) != 5 {
		t.Fatalf("got %d errors, want one per completion (5)", len(errs))
	}
	if errs[0] != nil || errs[1] != nil {
		t.Errorf("got errors %v, %v for valid outcomes, want nil", errs[0], errs[1])
	}
	if !errors.Is(errs[2], master.ErrStale) || !errors.Is(errs[3], master.ErrStale) {
		t.Errorf("got %v (wrong attempt) and %v (same task twice), want master.ErrStale", errs[2], errs[3])
	}
	if errs[4] == nil || errors.Is(errs[4], master.ErrStale) {
		t.Errorf("got %v for state cancelled, want a validation error", errs[4])
	}
	if tk := w.task(a.ID); tk.State != master.TaskDone || tk.Result != "A" {
		t.Errorf("a: got %s %q, want done A", tk.State, tk.Result)
	}
	if tk := w.task(b.ID); tk.State != master.TaskNeedInfo || len(tk.QA) != 1 || tk.QA[0].Question != "which one?" {
		t.Errorf("b: got %s %+v, want need_info with its question", tk.State, tk.QA)
	}
	if tk := w.task(ids1[2]); tk.State != master.TaskCancelled || !strings.Contains(tk.Error, "need_info") {
		t.Errorf("c: got %s %q, want cancelled by its dependency", tk.State, tk.Error)
	}
	if tk := w.task(d.ID); tk.State != master.TaskRunning || tk.Attempt != d.Attempt {
		t.Errorf("d: got %s attempt %d, want still running attempt %d", tk.State, tk.Attempt, d.Attempt)
	}
	kinds := func(session int64) map[master.SignalKind]int {
		m := map[master.SignalKind]int{}
		for _, sg := range w.signals(session) {
			m[sg.Kind]++
		}
		return m
	}
	if got, want := kinds(s1), map[master.SignalKind]int{master.SignalAck: 2, master.SignalTaskComplete: 2, master.SignalNeedInfo: 1}; !maps.Equal(got, want) {
		t.Errorf("session 1 signals %v, want %v", got, want)
	}
	if got, want := kinds(s2), map[master.SignalKind]int{master.SignalAck: 1}; !maps.Equal(got, want) {
		t.Errorf("session 2 signals %v, want %v (nothing for a stale outcome)", got, want)
	}
	var used int64
	if err := w.pool.QueryRow(w.ctx, `SELECT prompt_tokens + completion_tokens FROM sessions WHERE id = $1`, s1).Scan(&used); err != nil || used != 0 {
		t.Errorf("session 1 used %d tokens (%v), want none: calls are charged as they return, not with outcomes", used, err)
	}
	// Written once: the same outcome again is stale.
	if errs := w.store.CompleteTasks(w.ctx, []master.Completion{{Task: ref(a), Outcome: master.Outcome{State: master.TaskDone}}}); !errors.Is(errs[0], master.ErrStale) {
		t.Errorf("completing a again: got %v, want master.ErrStale", errs[0])
	}
}

func TestCompleteTasksWakesEachSession(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s1, s2 := w.session(), w.session()
	w.enqueue(s1, task("a", "1"))
	w.enqueue(s2, task("b", "2"))
	claimed := w.claim("w", 10)
	conn, err := w.pool.Acquire(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(w.ctx, "LISTEN "+store.WakeChannel); err != nil {
		t.Fatal(err)
	}
	errs := w.store.CompleteTasks(w.ctx, []master.Completion{
		{Task: ref(claimed[0]), Outcome: master.Outcome{State: master.TaskDone}},
		{Task: ref(claimed[1]), Outcome: master.Outcome{State: master.TaskDone}},
	})
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("CompleteTasks: %v", errs)
	}
	got := map[string]bool{}
	for len(got) < 2 {
		n, err := conn.Conn().WaitForNotification(w.ctx)
		if err != nil {
			t.Fatalf("wait for a wake: %v", err)
		}
		got[n.Payload] = true
	}
	if !got["m:"+itoa(s1)] || !got["m:"+itoa(s2)] { // no task waited on these: no wake for the workers
		t.Errorf("got wakes %v, want one for each session (%d, %d)", got, s1, s2)
	}
}

func TestExtendLeasesAndStaleTasks(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	w.enqueue(session, task("a", "1"), task("b", "2"))
	claimed := w.claim("w", 10)
	a, b := claimed[0], claimed[1]
	if _, err := w.pool.Exec(w.ctx, `UPDATE tasks SET lease_until = now() + interval '1 second' WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	refs := []master.TaskRef{ref(a), ref(b)}
	if stale, err := w.store.ExtendLeases(w.ctx, refs, leaseTime); err != nil || len(stale) > 0 {
		t.Fatalf("ExtendLeases: got %v, %v; want no stale task", stale, err)
	}
	if tk := w.task(a.ID); tk.LeaseUntil.Before(tk.StartedAt.Add(leaseTime / 2)) {
		t.Errorf("a's lease ends %v, want it extended by about %v", tk.LeaseUntil, leaseTime)
	}
	if _, err := w.store.CompleteTask(w.ctx, b.ID, b.Attempt, master.Outcome{State: master.TaskDone}); err != nil {
		t.Fatal(err)
	}
	for name, check := range map[string]func() ([]int64, error){
		"ExtendLeases": func() ([]int64, error) { return w.store.ExtendLeases(w.ctx, refs, leaseTime) },
		"StaleTasks":   func() ([]int64, error) { return w.store.StaleTasks(w.ctx, refs) },
	} {
		if stale, err := check(); err != nil || len(stale) != 1 || stale[0] != b.ID {
			t.Errorf("%s: got %v, %v; want only b (%d) stale", name, stale, err, b.ID)
		}
	}
	if tk := w.task(b.ID); tk.State != master.TaskDone || !tk.LeaseUntil.IsZero() {
		t.Errorf("b: got %s lease %v, want done without a lease (an extension never revives an ended task)", tk.State, tk.LeaseUntil)
	}
}

func TestExtendLeasesSkipsALockedTask(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	w.enqueue(session, task("a", "1"))
	a := w.claim("w", 1)[0]
	// Another transaction holds a's row, as a completion being written does.
	tx, err := w.pool.Begin(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(w.ctx, `SELECT 1 FROM tasks WHERE id = $1 FOR UPDATE`, a.ID); err != nil {
		t.Fatal(err)
	}
	// Returns without waiting for the lock, and a is not stale.
	if stale, err := w.store.ExtendLeases(w.ctx, []master.TaskRef{ref(a)}, leaseTime); err != nil || len(stale) > 0 {
		t.Errorf("ExtendLeases on a locked task: got %v, %v; want no stale task", stale, err)
	}
}

func TestRollbackAfterCancelKeepsTheConnection(t *testing.T) {
	t.Parallel()
	w := setup(t)
	conn, err := w.pool.Acquire(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	ctx, cancel := context.WithCancel(w.ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	cancel() // the caller gives up between statements, as a finished task's heartbeat did
	store.Rollback(ctx, tx)
	if conn.Conn().IsClosed() {
		t.Fatalf("connection %d closed by a rollback under a cancelled context, want it kept", pid)
	}
	var status string
	if err := conn.QueryRow(w.ctx, `SELECT 'idle'`).Scan(&status); err != nil {
		t.Errorf("connection unusable after the rollback: %v", err)
	}
}

func TestTaskInputCarriesRecordedCalls(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	if _, err := w.pool.Exec(w.ctx, `INSERT INTO session_roles (session_id, name) VALUES ($1, 'a')`, session); err != nil {
		t.Fatal(err)
	}
	w.enqueue(session, task("a", "1"))
	tk := w.claim("w", 1)[0]
	in, err := w.store.TaskInput(w.ctx, tk)
	if err != nil || len(in.Calls) != 0 {
		t.Fatalf("TaskInput before any call: got %d calls, %v; want none", len(in.Calls), err)
	}
	w.plan(tk, 0, planned("c1", "fetch_url", `{"url":"https://example.com"}`), planned("c2", "x__y", `{}`))
	// The worker dies; the next attempt reads what it recorded.
	w.expire(tk.ID)
	if _, _, err := w.store.SweepExpired(w.ctx); err != nil {
		t.Fatal(err)
	}
	tk = w.claim("w", 1)[0]
	in, err = w.store.TaskInput(w.ctx, tk)
	if err != nil {
		t.Fatalf("TaskInput: %v", err)
	}
	if got, want := in.Calls, w.calls(tk.ID); len(got) != 2 || !slices.Equal(got, want) {
		t.Errorf("TaskInput calls %+v, want the recorded %+v", got, want)
	}
	if in.Role.Name != "a" || in.Goal == "" {
		t.Errorf("TaskInput role %q goal %q, want role a and the session's goal", in.Role.Name, in.Goal)
	}
}

// A first attempt that was handed no file gets its input with its claim,
// as TaskInput reads it; a task that depends on others gets their results
// too (what a worker reads of them: id, role, state, result, error).
func TestClaimCarriesTheInput(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	_, ids := w.enqueue(s.ID, task("researcher", "look"), task("writer", "write", 0))
	claimed := w.claim("w", 10)
	if len(claimed) != 1 || claimed[0].ID != ids[0] || claimed[0].Input == nil {
		t.Fatalf("claimed %+v, want the first task with its input", claimed)
	}
	got := *claimed[0].Input
	claimed[0].Input = nil
	want, err := w.store.TaskInput(w.ctx, claimed[0])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("input with the claim %+v\nwant TaskInput's %+v", got, want)
	}
	if _, err := w.store.CompleteTask(w.ctx, claimed[0].ID, claimed[0].Attempt, master.Outcome{State: master.TaskDone, Result: "found"}); err != nil {
		t.Fatal(err)
	}
	next := w.claim("w", 10)
	if len(next) != 1 || next[0].Input == nil {
		t.Fatalf("claimed %+v, want the dependent task with its input", next)
	}
	got = *next[0].Input
	next[0].Input = nil
	if want, err = w.store.TaskInput(w.ctx, next[0]); err != nil {
		t.Fatal(err)
	}
	for i, d := range want.Deps {
		want.Deps[i] = master.Task{ID: d.ID, Role: d.Role, State: d.State, Result: d.Result, Error: d.Error}
	}
	if len(got.Deps) != 1 || got.Deps[0].Result != "found" || !reflect.DeepEqual(got, want) {
		t.Errorf("input with the claim %+v\nwant TaskInput's %+v", got, want)
	}
}
