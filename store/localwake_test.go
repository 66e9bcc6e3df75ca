package store_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/store/storetest"
)

// A wake the store commits itself reaches its listener's subscribers at
// commit, once: the NOTIFY's copy is skipped. Postgres delivers
// notifications in commit order, so a marker sent after the commit comes
// after any copy: receiving the marker next shows there was none.
func TestOwnWakeArrivesAtCommitOnce(t *testing.T) {
	t.Parallel()
	w := setup(t)
	_, wake := w.listen()
	session := w.session()
	id := strconv.FormatInt(session, 10)

	if err := w.store.NotifyCommitted(w.ctx, session, false); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, wake); got != id {
		t.Fatalf("got wake %q, want %q", got, id)
	}
	if err := w.store.Notify(w.ctx, "marker-1"); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, wake); got != "marker-1" {
		t.Fatalf("after the local wake: got %q, want the marker (the NOTIFY's copy must be skipped)", got)
	}

	// A rolled-back transaction wakes nobody, here or elsewhere.
	if err := w.store.NotifyCommitted(w.ctx, session, true); err != nil {
		t.Fatal(err)
	}
	if err := w.store.Notify(w.ctx, "marker-2"); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, wake); got != "marker-2" {
		t.Fatalf("after a rollback: got %q, want the marker", got)
	}

	// The same payload sent by anyone else is delivered as ever.
	if err := w.store.Notify(w.ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, wake); got != id {
		t.Fatalf("a NOTIFY not sent by a local commit: got %q, want %q", got, id)
	}
}

// Outcomes written together wake the sessions they touched at commit,
// from this process: a listener that is not even connected (so no
// NOTIFY can reach it) has the wake when CompleteTasks returns.
func TestGroupedOutcomesWakeAtCommit(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s1, s2 := w.session(), w.session()
	w.enqueue(s1, task("a", "1"))
	w.enqueue(s2, task("b", "2"))
	claimed := w.claim("w", 10)
	wake, unsubscribe := w.store.NewListener().Subscribe() // never Run
	defer unsubscribe()
	errs := w.store.CompleteTasks(w.ctx, []master.Completion{
		{Task: ref(claimed[0]), Outcome: master.Outcome{State: master.TaskDone}},
		{Task: ref(claimed[1]), Outcome: master.Outcome{State: master.TaskDone}},
	})
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("CompleteTasks: %v", errs)
	}
	select {
	case got := <-wake:
		// A subscriber's wakes coalesce: the two sessions' read as one.
		if got != store.WakeAll {
			t.Errorf("got wake %q, want %q: one wake for each of the two sessions, coalesced", got, store.WakeAll)
		}
	default:
		t.Fatal("no wake when CompleteTasks returned: it must be handed over at commit")
	}
}

// Done outcomes whose sessions are known are written in one statement
// that sends their wakes itself: each session's says what changed ("t"
// when a queued task waited on these, "m" once its round has ended), the
// wakes reach this process's listeners when CompleteTasks returns, once
// (the NOTIFY's copy is skipped: the marker sent after comes next), and
// a stale outcome among them is refused as in a transaction.
func TestDoneOutcomesWakeInTheirStatement(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s1, s2 := w.session(), w.session()
	_, ids1 := w.enqueue(s1, task("a", "1"), task("b", "2", 0))
	w.enqueue(s2, task("c", "3"))
	claimed := w.claim("w", 10)
	if len(claimed) != 2 || claimed[0].ID != ids1[0] {
		t.Fatalf("claimed %+v, want a and c (b waits for a)", claimed)
	}
	a, c := claimed[0], claimed[1]
	raw, err := w.pool.Acquire(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Release()
	if _, err := raw.Exec(w.ctx, "LISTEN "+store.WakeChannel); err != nil {
		t.Fatal(err)
	}
	_, wake := w.listen()
	idle, unsubscribe := w.store.NewListener().Subscribe() // never Run: only a local wake reaches it
	defer unsubscribe()

	stale := ref(c)
	stale.Attempt++
	errs := w.store.CompleteTasks(w.ctx, []master.Completion{
		{Task: ref(a), Outcome: master.Outcome{State: master.TaskDone, Result: "A"}, SessionID: s1},
		{Task: stale, Outcome: master.Outcome{State: master.TaskDone, Result: "late"}, SessionID: s2},
	})
	if errs[0] != nil || !errors.Is(errs[1], master.ErrStale) {
		t.Fatalf("CompleteTasks: %v, want a written and the stale outcome refused", errs)
	}
	select {
	case <-idle:
	default:
		t.Fatal("no local wake when CompleteTasks returned")
	}
	if got := recv(t, wake); got != strconv.FormatInt(s1, 10) {
		t.Fatalf("got wake %q, want session %d's", got, s1)
	}
	if err := w.store.Notify(w.ctx, "marker"); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, wake); got != "marker" {
		t.Fatalf("after the local wake: got %q, want the marker (the NOTIFY's copy must be skipped)", got)
	}

	// Then c, ending its round, and b (claimable now), ending a's.
	errs = w.store.CompleteTasks(w.ctx, []master.Completion{{Task: ref(c), Outcome: master.Outcome{State: master.TaskDone}, SessionID: s2}})
	if errs[0] != nil {
		t.Fatal(errs[0])
	}
	b := w.claim("w", 10)
	if len(b) != 1 || b[0].ID != ids1[1] {
		t.Fatalf("claimed %+v, want b", b)
	}
	if errs = w.store.CompleteTasks(w.ctx, []master.Completion{{Task: ref(b[0]), Outcome: master.Outcome{State: master.TaskDone}, SessionID: s1}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	var got []string
	for len(got) < 4 {
		n, err := raw.Conn().WaitForNotification(w.ctx)
		if err != nil {
			t.Fatalf("wait for a wake: %v", err)
		}
		got = append(got, n.Payload)
	}
	want := []string{"t:" + itoa(s1), "marker", "m:" + itoa(s2), "m:" + itoa(s1)}
	if !slices.Equal(got, want) {
		t.Errorf("NOTIFYs %q, want %q", got, want)
	}
}

// A done outcome whose session is known costs one statement: no begin,
// no separate NOTIFY, no commit.
func TestADoneOutcomeIsOneStatement(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var stmts []string
	st, err := store.Open(t.Context(), storetest.URL(t), nil, store.WithStatementLog(func(sql string) {
		mu.Lock()
		stmts = append(stmts, strings.Join(strings.Fields(sql), " "))
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: t.Context(), store: st, pool: store.Pool(st)}
	s := w.session()
	w.enqueue(s, task("a", "1"))
	claimed := w.claim("w", 10)
	mu.Lock()
	stmts = nil
	mu.Unlock()
	if errs := st.CompleteTasks(w.ctx, []master.Completion{{Task: ref(claimed[0]), Outcome: master.Outcome{State: master.TaskDone}, SessionID: s}}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	mu.Lock()
	defer mu.Unlock()
	if len(stmts) != 1 {
		t.Errorf("completing a done task took %d statements, want 1: %q", len(stmts), stmts)
	}
}

// The last two tasks of a round, ended at the same instant by two
// processes, each see the other still running: a task ended while the
// rest of its round runs under another worker wakes the master, so one
// of the two wakes comes after both commits. Within one process, whose
// outcomes are written one write after another, the master is woken when
// the round ends only. Both ways of writing outcomes alike.
func TestARoundEndingInTwoProcessesWakesTheMaster(t *testing.T) {
	t.Parallel()
	for _, withSession := range []bool{true, false} {
		t.Run(map[bool]string{true: "one statement", false: "transaction"}[withSession], func(t *testing.T) {
			t.Parallel()
			w := setup(t)
			raw, err := w.pool.Acquire(w.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Release()
			if _, err := raw.Exec(w.ctx, "LISTEN "+store.WakeChannel); err != nil {
				t.Fatal(err)
			}
			next := func() string {
				n, err := raw.Conn().WaitForNotification(w.ctx)
				if err != nil {
					t.Fatalf("wait for a wake: %v", err)
				}
				return n.Payload
			}
			// complete ends tk and returns the wake it sent, "" for none
			// (a marker sent after it comes first).
			complete := func(tk master.Task) string {
				c := master.Completion{Task: ref(tk), Outcome: master.Outcome{State: master.TaskDone}}
				if withSession {
					c.SessionID = tk.SessionID
				}
				if errs := w.store.CompleteTasks(w.ctx, []master.Completion{c}); errs[0] != nil {
					t.Fatal(errs[0])
				}
				if err := w.store.Notify(w.ctx, "marker"); err != nil {
					t.Fatal(err)
				}
				if got := next(); got != "marker" {
					if m := next(); m != "marker" {
						t.Fatalf("after the wake %q: %q, want the marker", got, m)
					}
					return got
				}
				return ""
			}
			claim := func(worker string) master.Task {
				tasks, err := w.store.ClaimTasks(w.ctx, master.Scope{}, worker, 1, time.Hour)
				if err != nil || len(tasks) != 1 {
					t.Fatalf("claim: %v, %v", tasks, err)
				}
				return tasks[0]
			}

			// Two processes.
			two := w.session()
			w.enqueue(two, task("a", "1"), task("b", "2"))
			next() // the enqueue's wake
			a, b := claim("p1"), claim("p2")
			if got := complete(a); got != "m:"+itoa(two) {
				t.Errorf("a ended while b runs in another process: wake %q, want the master's", got)
			}
			if got := complete(b); got != "m:"+itoa(two) {
				t.Errorf("b ended the round: wake %q, want the master's", got)
			}

			// One process.
			one := w.session()
			w.enqueue(one, task("c", "3"), task("d", "4"))
			next()
			c, d := claim("p1"), claim("p1")
			if got := complete(c); got != "" {
				t.Errorf("c ended while d runs in the same process: wake %q, want none", got)
			}
			if got := complete(d); got != "m:"+itoa(one) {
				t.Errorf("d ended the round: wake %q, want the master's", got)
			}
		})
	}
}
