package store_test

import (
	"strconv"
	"testing"
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
