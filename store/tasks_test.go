package store_test

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

const leaseTime = 30 * time.Second

func TestEnqueueTasksMapsDependencies(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	turn, ids := w.enqueue(session,
		task("researcher", "find sources"),
		task("analyst", "compare them", 0),
		task("writer", "write it up", 0, 1, 1),
	)
	if len(ids) != 3 || !(ids[0] < ids[1] && ids[1] < ids[2]) {
		t.Fatalf("got ids %v, want 3 ascending ids", ids)
	}
	tasks, err := w.store.TurnTasks(w.ctx, turn)
	if err != nil {
		t.Fatalf("TurnTasks: %v", err)
	}
	if len(tasks) != 3 {
		t.Fatalf("got %d tasks, want 3", len(tasks))
	}
	want := [][]int64{{}, {ids[0]}, {ids[0], ids[1]}}
	for i, tk := range tasks {
		if tk.ID != ids[i] || !slices.Equal(tk.DependsOn, want[i]) {
			t.Errorf("task %d: got id %d depends_on %v, want id %d depends_on %v", i, tk.ID, tk.DependsOn, ids[i], want[i])
		}
		if tk.State != master.TaskQueued || tk.SessionID != session || tk.TurnID != turn || tk.Round != 1 || tk.Attempt != 0 {
			t.Errorf("task %d: got %+v, want queued attempt 0 of session %d turn %d round 1", i, tk, session, turn)
		}
		if !tk.StartedAt.IsZero() || !tk.EndedAt.IsZero() || !tk.LeaseUntil.IsZero() || tk.WorkerID != "" {
			t.Errorf("task %d: got started %v ended %v lease %v worker %q, want zero values", i, tk.StartedAt, tk.EndedAt, tk.LeaseUntil, tk.WorkerID)
		}
	}
}

func TestEnqueueTasksRejectsBadBatches(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	turn := w.turn(session)
	for _, tc := range []struct {
		name  string
		tasks []master.NewTask
		want  string
	}{
		{"empty", nil, "no tasks"},
		{"self", []master.NewTask{task("a", "x", 0)}, "depends on itself"},
		{"forward", []master.NewTask{task("a", "x", 1), task("b", "y")}, "later task"},
		{"cycle", []master.NewTask{task("a", "x", 1), task("b", "y", 0)}, "later task"},
		{"out of range", []master.NewTask{task("a", "x"), task("b", "y", 5)}, "out of range"},
		{"negative", []master.NewTask{task("a", "x"), task("b", "y", -1)}, "out of range"},
		{"bad role", []master.NewTask{task("Bad Role", "x")}, "not a slug"},
		{"empty instruction", []master.NewTask{task("a", "  ")}, "empty instruction"},
	} {
		_, err := w.store.EnqueueTasks(w.ctx, session, turn, 1, tc.tasks)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	// A turn of another session is refused by the schema.
	other := w.session()
	if _, err := w.store.EnqueueTasks(w.ctx, other, turn, 1, []master.NewTask{task("a", "x")}); err == nil {
		t.Errorf("enqueue into a turn of another session: got nil error, want a foreign key violation")
	}
	if tasks, _ := w.store.TurnTasks(w.ctx, turn); len(tasks) != 0 {
		t.Errorf("got %d tasks after rejected batches, want 0", len(tasks))
	}
}

func TestClaimWritesAckAndLease(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	_, ids := w.enqueue(session, task("a", "one"), task("b", "two"))
	claimed := w.claim("w1", 5)
	if len(claimed) != 2 || claimed[0].ID != ids[0] || claimed[1].ID != ids[1] {
		t.Fatalf("got %v, want tasks %v oldest first", taskIDs(claimed), ids)
	}
	for _, tk := range claimed {
		if tk.State != master.TaskRunning || tk.Attempt != 1 || tk.WorkerID != "w1" || tk.LeaseUntil.IsZero() || tk.StartedAt.IsZero() {
			t.Errorf("got %+v, want running attempt 1 of w1 with lease and start", tk)
		}
		if d := time.Until(tk.LeaseUntil); d < leaseTime-time.Minute || d > leaseTime+time.Minute {
			t.Errorf("task %d: got lease until %v (in %v), want about %v from now", tk.ID, tk.LeaseUntil, d, leaseTime)
		}
	}
	sigs := w.signals(session)
	if len(sigs) != 2 {
		t.Fatalf("got %d signals, want 2 ACKs", len(sigs))
	}
	for i, sg := range sigs {
		var p struct {
			Worker  string
			Attempt int
		}
		if err := json.Unmarshal(sg.Payload, &p); err != nil {
			t.Fatalf("payload %s: %v", sg.Payload, err)
		}
		if sg.Kind != master.SignalAck || sg.TaskID != ids[i] || p.Worker != "w1" || p.Attempt != 1 {
			t.Errorf("signal %d: got %s task %d payload %s, want ACK task %d {worker w1, attempt 1}", i, sg.Kind, sg.TaskID, sg.Payload, ids[i])
		}
	}
	if more := w.claim("w2", 5); len(more) != 0 {
		t.Errorf("second claim: got %v, want nothing", taskIDs(more))
	}
}

func TestClaimSkipsDissolvedSessions(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	w.enqueue(session, task("a", "one"))
	if _, err := w.pool.Exec(w.ctx, `UPDATE sessions SET state = 'dissolved', ended_at = now() WHERE id = $1`, session); err != nil {
		t.Fatal(err)
	}
	if got := w.claim("w1", 5); len(got) != 0 {
		t.Errorf("got %v, want no task of a dissolved session", taskIDs(got))
	}
}

func TestConcurrentClaimersClaimEachTaskOnce(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	const total, claimers = 1000, 8
	batch := make([]master.NewTask, total)
	for i := range batch {
		batch[i] = task("worker", "item")
	}
	turn, _ := w.enqueue(session, batch...)

	var mu sync.Mutex
	seen := map[int64]string{}
	var dups []int64
	var wg sync.WaitGroup
	errs := make(chan error, claimers)
	for c := range claimers {
		worker := string(rune('a' + c))
		wg.Go(func() {
			for {
				tasks, err := w.store.ClaimTasks(w.ctx, master.Scope{}, worker, 7, leaseTime)
				if err != nil {
					errs <- err
					return
				}
				if len(tasks) == 0 {
					return
				}
				mu.Lock()
				for _, tk := range tasks {
					if _, ok := seen[tk.ID]; ok {
						dups = append(dups, tk.ID)
					}
					seen[tk.ID] = worker
				}
				mu.Unlock()
				for _, tk := range tasks {
					if _, err := w.store.CompleteTask(w.ctx, tk.ID, tk.Attempt, master.Outcome{State: master.TaskDone, Result: "ok"}); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("claimer: %v", err)
	}
	if len(dups) != 0 {
		t.Errorf("got %d tasks claimed twice (%v), want 0", len(dups), dups[:min(len(dups), 10)])
	}
	if len(seen) != total {
		t.Errorf("got %d distinct tasks claimed, want %d", len(seen), total)
	}
	var done, attempts int
	if err := w.pool.QueryRow(w.ctx, `SELECT count(*) FILTER (WHERE state = 'done'), coalesce(sum(attempt), 0) FROM tasks WHERE turn_id = $1`, turn).Scan(&done, &attempts); err != nil {
		t.Fatal(err)
	}
	if done != total || attempts != total {
		t.Errorf("got %d done with %d attempts, want %d and %d", done, attempts, total, total)
	}
	if open, err := w.store.RoundOpen(w.ctx, turn, 1); err != nil || open != 0 {
		t.Errorf("RoundOpen: got %d, %v, want 0", open, err)
	}
}

func TestExpiredLeaseIsReclaimedAndLateCompletionIsStale(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	_, ids := w.enqueue(session, task("a", "one"))
	first := w.claim("w1", 1)[0]

	if err := w.store.Heartbeat(w.ctx, first.ID, first.Attempt, leaseTime); err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	w.expire(first.ID)
	requeued, failed, err := w.store.SweepExpired(w.ctx)
	if err != nil || requeued != 1 || failed != 0 {
		t.Fatalf("SweepExpired: got %d requeued, %d failed, %v, want 1, 0, nil", requeued, failed, err)
	}
	if tk := w.task(ids[0]); tk.State != master.TaskQueued || tk.WorkerID != "" || !tk.LeaseUntil.IsZero() {
		t.Fatalf("after sweep: got state %s worker %q lease %v, want queued with no worker and no lease", tk.State, tk.WorkerID, tk.LeaseUntil)
	}
	second := w.claim("w2", 1)
	if len(second) != 1 || second[0].Attempt != 2 || second[0].WorkerID != "w2" {
		t.Fatalf("re-claim: got %+v, want attempt 2 by w2", second)
	}
	if !second[0].StartedAt.Equal(first.StartedAt) {
		t.Errorf("got started_at %v after re-claim, want the first start %v", second[0].StartedAt, first.StartedAt)
	}

	// The first worker wakes up and reports: nothing changes.
	before := w.signals(session)
	_, err = w.store.CompleteTask(w.ctx, first.ID, first.Attempt, master.Outcome{State: master.TaskDone, Result: "late", Usage: master.Usage{PromptTokens: 5}})
	if !errors.Is(err, master.ErrStale) {
		t.Fatalf("late CompleteTask: got %v, want ErrStale", err)
	}
	if err := w.store.Heartbeat(w.ctx, first.ID, first.Attempt, leaseTime); !errors.Is(err, master.ErrStale) {
		t.Errorf("late Heartbeat: got %v, want ErrStale", err)
	}
	if tk := w.task(ids[0]); tk.State != master.TaskRunning || tk.Attempt != 2 || tk.Result != "" || tk.Usage != (master.Usage{}) {
		t.Errorf("after late completion: got %+v, want still running attempt 2 with no result or usage", tk)
	}
	if after := w.signals(session); len(after) != len(before) {
		t.Errorf("got %d signals after the late completion, want %d", len(after), len(before))
	}

	// The current attempt completes normally.
	got, err := w.store.CompleteTask(w.ctx, second[0].ID, 2, master.Outcome{State: master.TaskDone, Result: "fresh", Usage: master.Usage{PromptTokens: 10, CompletionTokens: 3}})
	if err != nil || got.State != master.TaskDone || got.Result != "fresh" || got.EndedAt.IsZero() || !got.LeaseUntil.IsZero() {
		t.Fatalf("CompleteTask: got %+v, %v, want done with result fresh", got, err)
	}
	var prompt, completion int64
	if err := w.pool.QueryRow(w.ctx, `SELECT prompt_tokens, completion_tokens FROM sessions WHERE id = $1`, session).Scan(&prompt, &completion); err != nil {
		t.Fatal(err)
	}
	if prompt != 0 || completion != 0 {
		t.Errorf("session usage: got %d/%d, want none: the task's calls were charged as they returned (SettleSpend), not with its outcome", prompt, completion)
	}
	// Completing twice is stale too.
	if _, err := w.store.CompleteTask(w.ctx, second[0].ID, 2, master.Outcome{State: master.TaskFailed}); !errors.Is(err, master.ErrStale) {
		t.Errorf("second CompleteTask: got %v, want ErrStale", err)
	}
}

func TestSweepFailsAtAttemptLimitAndCascades(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	_, ids := w.enqueue(session, task("a", "one"), task("b", "two", 0))
	for attempt := 1; attempt <= 3; attempt++ {
		claimed := w.claim("w", 1)
		if len(claimed) != 1 || claimed[0].Attempt != attempt {
			t.Fatalf("claim %d: got %+v, want attempt %d of task %d", attempt, claimed, attempt, ids[0])
		}
		w.expire(claimed[0].ID)
		requeued, failed, err := w.store.SweepExpired(w.ctx)
		wantRequeued, wantFailed := 1, 0
		if attempt == 3 {
			wantRequeued, wantFailed = 0, 1
		}
		if err != nil || requeued != wantRequeued || failed != wantFailed {
			t.Fatalf("sweep %d: got %d requeued, %d failed, %v, want %d, %d", attempt, requeued, failed, err, wantRequeued, wantFailed)
		}
	}
	a, b := w.task(ids[0]), w.task(ids[1])
	if a.State != master.TaskFailed || a.Error != "lease expired after 3 attempts" || a.EndedAt.IsZero() {
		t.Errorf("task a: got %s %q, want failed \"lease expired after 3 attempts\"", a.State, a.Error)
	}
	if want := "dependency #" + itoa(ids[0]) + " ended failed"; b.State != master.TaskCancelled || b.Error != want {
		t.Errorf("task b: got %s %q, want cancelled %q", b.State, b.Error, want)
	}
	if got := w.claim("w", 1); len(got) != 0 {
		t.Errorf("got %v claimable, want none", taskIDs(got))
	}
	if r, f, err := w.store.SweepExpired(w.ctx); r != 0 || f != 0 || err != nil {
		t.Errorf("idle sweep: got %d, %d, %v, want 0, 0, nil", r, f, err)
	}
}

func TestDependenciesGateClaimsAndFailuresCascade(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	// a ← b ← c, and d independent.
	turn, ids := w.enqueue(session, task("a", "one"), task("b", "two", 0), task("c", "three", 1), task("d", "four"))

	claimed := w.claim("w", 10)
	if got := taskIDs(claimed); !slices.Equal(got, []int64{ids[0], ids[3]}) {
		t.Fatalf("first claim: got %v, want a and d %v", got, []int64{ids[0], ids[3]})
	}
	if _, err := w.store.CompleteTask(w.ctx, ids[0], 1, master.Outcome{State: master.TaskDone, Result: "A"}); err != nil {
		t.Fatal(err)
	}
	claimed = w.claim("w", 10)
	if got := taskIDs(claimed); !slices.Equal(got, []int64{ids[1]}) {
		t.Fatalf("after a done: got %v, want b %d", got, ids[1])
	}
	if _, err := w.store.CompleteTask(w.ctx, ids[1], 1, master.Outcome{State: master.TaskFailed, Error: "boom"}); err != nil {
		t.Fatal(err)
	}
	c := w.task(ids[2])
	if want := "dependency #" + itoa(ids[1]) + " ended failed"; c.State != master.TaskCancelled || c.Error != want || c.EndedAt.IsZero() {
		t.Errorf("c: got %s %q, want cancelled %q", c.State, c.Error, want)
	}
	if open, err := w.store.RoundOpen(w.ctx, turn, 1); err != nil || open != 1 {
		t.Errorf("RoundOpen: got %d, %v, want 1 (d still running)", open, err)
	}
	if _, err := w.store.CompleteTask(w.ctx, ids[3], 1, master.Outcome{State: master.TaskDone}); err != nil {
		t.Fatal(err)
	}
	if open, err := w.store.RoundOpen(w.ctx, turn, 1); err != nil || open != 0 {
		t.Errorf("RoundOpen: got %d, %v, want 0", open, err)
	}
}

func TestNonDoneOutcomeCancelsDependentsTransitively(t *testing.T) {
	t.Parallel()
	for _, state := range []master.TaskState{master.TaskFailed, master.TaskBlocked, master.TaskNeedInfo, master.TaskTimeout} {
		t.Run(string(state), func(t *testing.T) {
			t.Parallel()
			w := setup(t)
			session := w.session()
			// a ← b ← c, a ← c; a ← d ← e.
			_, ids := w.enqueue(session, task("a", "1"), task("b", "2", 0), task("c", "3", 1, 0), task("d", "4", 0), task("e", "5", 3))
			w.claim("w", 10)
			if _, err := w.store.CompleteTask(w.ctx, ids[0], 1, master.Outcome{State: state, Result: "why", Error: "err"}); err != nil {
				t.Fatal(err)
			}
			for i, id := range ids[1:] {
				if tk := w.task(id); tk.State != master.TaskCancelled || !strings.HasPrefix(tk.Error, "dependency #") {
					t.Errorf("task %d: got %s %q, want cancelled by a dependency", i+1, tk.State, tk.Error)
				}
			}
			if tk := w.task(ids[4]); tk.Error != "dependency #"+itoa(ids[3])+" ended cancelled" {
				t.Errorf("e: got error %q, want its direct dependency d", tk.Error)
			}
			// a's own signal plus one TASK_COMPLETE per cancelled task.
			kinds := map[master.SignalKind]int{}
			for _, sg := range w.signals(session) {
				kinds[sg.Kind]++
			}
			wantKind := map[master.TaskState]master.SignalKind{
				master.TaskFailed: master.SignalTaskComplete, master.TaskTimeout: master.SignalTaskComplete,
				master.TaskBlocked: master.SignalBlocked, master.TaskNeedInfo: master.SignalNeedInfo,
			}[state]
			want := map[master.SignalKind]int{master.SignalAck: 1, master.SignalTaskComplete: 4}
			want[wantKind]++
			if !maps.Equal(kinds, want) {
				t.Errorf("got signals %v, want %v", kinds, want)
			}
		})
	}
}

func TestCompleteTaskWritesSignals(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	_, ids := w.enqueue(session, task("a", "1"), task("b", "2"), task("c", "3"))
	w.claim("w", 3)
	outcomes := []master.Outcome{
		{State: master.TaskDone, Result: "R", Usage: master.Usage{PromptTokens: 7, CompletionTokens: 2}},
		{State: master.TaskBlocked, Result: "no access"},
		{State: master.TaskNeedInfo, Result: "which year?"},
	}
	for i, out := range outcomes {
		if _, err := w.store.CompleteTask(w.ctx, ids[i], 1, out); err != nil {
			t.Fatalf("CompleteTask %d: %v", i, err)
		}
	}
	sigs := w.signals(session)[3:] // after the ACKs
	want := []struct {
		kind    master.SignalKind
		payload string
	}{
		{master.SignalTaskComplete, `{"state": "done", "tokens": {"prompt": 7, "completion": 2}}`},
		{master.SignalBlocked, `{"reason": "no access"}`},
		{master.SignalNeedInfo, `{"question": "which year?"}`},
	}
	if len(sigs) != len(want) {
		t.Fatalf("got %d completion signals, want %d", len(sigs), len(want))
	}
	for i, sg := range sigs {
		if sg.Kind != want[i].kind || sg.TaskID != ids[i] || !jsonEqual(t, sg.Payload, want[i].payload) {
			t.Errorf("signal %d: got %s task %d %s, want %s task %d %s", i, sg.Kind, sg.TaskID, sg.Payload, want[i].kind, ids[i], want[i].payload)
		}
	}
	if _, err := w.store.CompleteTask(w.ctx, ids[0], 1, master.Outcome{State: master.TaskCancelled}); err == nil || errors.Is(err, master.ErrStale) {
		t.Errorf("CompleteTask with state cancelled: got %v, want a validation error", err)
	}
}

func TestCancelSessionTasks(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	other := w.session()
	_, ids := w.enqueue(session, task("a", "1"), task("b", "2"), task("c", "3"))
	_, otherIDs := w.enqueue(other, task("a", "1"))
	running := w.claim("w", 1)[0] // a (oldest)
	if _, err := w.store.CompleteTask(w.ctx, running.ID, 1, master.Outcome{State: master.TaskDone}); err != nil {
		t.Fatal(err)
	}
	running = w.claim("w", 1)[0] // b

	n, err := w.store.CancelSessionTasks(w.ctx, session, "session dissolved")
	if err != nil || n != 2 {
		t.Fatalf("CancelSessionTasks: got %d, %v, want 2 (b running, c queued)", n, err)
	}
	wantStates := []master.TaskState{master.TaskDone, master.TaskCancelled, master.TaskCancelled}
	for i, id := range ids {
		if tk := w.task(id); tk.State != wantStates[i] {
			t.Errorf("task %d: got %s, want %s", i, tk.State, wantStates[i])
		} else if i > 0 && (tk.Error != "session dissolved" || tk.EndedAt.IsZero()) {
			t.Errorf("task %d: got error %q ended %v, want \"session dissolved\" and an end", i, tk.Error, tk.EndedAt)
		}
	}
	if tk := w.task(otherIDs[0]); tk.State != master.TaskQueued {
		t.Errorf("other session's task: got %s, want queued", tk.State)
	}
	if _, err := w.store.CompleteTask(w.ctx, running.ID, running.Attempt, master.Outcome{State: master.TaskDone}); !errors.Is(err, master.ErrStale) {
		t.Errorf("completion after cancel: got %v, want ErrStale", err)
	}
	if err := w.store.Heartbeat(w.ctx, running.ID, running.Attempt, leaseTime); !errors.Is(err, master.ErrStale) {
		t.Errorf("heartbeat after cancel: got %v, want ErrStale", err)
	}
	if n, err := w.store.CancelSessionTasks(w.ctx, session, "again"); err != nil || n != 0 {
		t.Errorf("second cancel: got %d, %v, want 0", n, err)
	}
}

func TestTaskNotFound(t *testing.T) {
	t.Parallel()
	w := setup(t)
	if _, err := w.store.Task(w.ctx, 424242); !errors.Is(err, master.ErrNotFound) {
		t.Errorf("got %v, want ErrNotFound", err)
	}
}

func TestSignalsPagesAndAddSignal(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	_, ids := w.enqueue(session, task("a", "1"))
	for i := range 5 {
		p := []byte(`{"percent": ` + itoa(int64(i*20)) + `}`)
		if _, err := w.store.AddSignal(w.ctx, master.Signal{SessionID: session, TaskID: ids[0], Kind: master.SignalProgress, Payload: p}); err != nil {
			t.Fatalf("AddSignal: %v", err)
		}
	}
	if _, err := w.store.AddSignal(w.ctx, master.Signal{SessionID: session, Kind: master.SignalHandoff}); err != nil {
		t.Fatalf("AddSignal without task: %v", err)
	}
	page1, err := w.store.Signals(w.ctx, session, 0, 4)
	if err != nil || len(page1) != 4 {
		t.Fatalf("page 1: got %d, %v, want 4", len(page1), err)
	}
	page2, err := w.store.Signals(w.ctx, session, page1[3].ID, 4)
	if err != nil || len(page2) != 2 {
		t.Fatalf("page 2: got %d, %v, want 2", len(page2), err)
	}
	last := page2[1]
	if last.Kind != master.SignalHandoff || last.TaskID != 0 || string(last.Payload) != "{}" || last.At.IsZero() {
		t.Errorf("got %+v, want a HANDOFF about the session with payload {}", last)
	}
}

func taskIDs(tasks []master.Task) []int64 {
	ids := make([]int64, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	return ids
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func jsonEqual(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("payload %s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}
