package store_test

import (
	"strconv"
	"testing"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
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
