package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/callonbot/callon/store"
)

// A process watching another takes its work back the moment it dies (its
// liveness connection closes), with no sweep: its task is queued again,
// its master lease freed, its registration removed. A live process is
// not taken over.
func TestWatchTakesOverADeadProcessAtOnce(t *testing.T) {
	t.Parallel()
	w := setup(t)
	ctx, stop := context.WithCancel(w.ctx)
	defer stop()
	doomed := w.store.NewLiveness("p-doomed")
	store.SetLivenessTimings(doomed, time.Hour) // once cut off, it never comes back
	go doomed.Run(ctx)
	<-doomed.Ready()
	watcher := w.store.NewLiveness("p-watcher")
	go watcher.Run(ctx)
	<-watcher.Ready()
	if took, err := w.store.TakeOver(w.ctx, "p-watcher"); took || err != nil {
		t.Fatalf("TakeOver of a live process = %v, %v; want false", took, err)
	}
	go watcher.Watch(ctx)

	s := w.startSession()
	w.lease(s, "p-doomed")
	_, ids := w.enqueue(s.ID, task("researcher", "look"))
	if got := w.claim("p-doomed", 1); len(got) != 1 || got[0].ID != ids[0] {
		t.Fatalf("claim: %+v", got)
	}
	// The process dies: Postgres closes its connection.
	if _, err := w.pool.Exec(w.ctx, `SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN processes p ON l.objid = p.lock_key
		WHERE l.locktype = 'advisory' AND l.granted AND p.owner = 'p-doomed'
		  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for w.task(ids[0]).State != "queued" {
		if time.Now().After(deadline) {
			t.Fatalf("the dead process's task is %s 10 s after its death, want queued again without a sweep", w.task(ids[0]).State)
		}
		time.Sleep(10 * time.Millisecond) // polling an outside effect: no event to wait on
	}
	var owner string
	var registered int
	w.pool.QueryRow(w.ctx, `SELECT coalesce(master_owner, '-'), (SELECT count(*) FROM processes WHERE owner = 'p-doomed')
		FROM sessions WHERE id = $1`, s.ID).Scan(&owner, &registered)
	if owner != "-" || registered != 0 {
		t.Errorf("master owner %q, %d registrations of the dead process; want the lease freed and none", owner, registered)
	}
}
