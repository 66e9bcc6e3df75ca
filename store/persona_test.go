package store_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/callonbot/callon/store"
)

// The notice that members cannot post in their own names is queued once,
// and wakes the outbox when it is: this process's senders at commit, the
// others by a NOTIFY that names the outbox kind (a sender subscribes to
// it alone, so a wake of another kind would leave the notice waiting for
// its poll).
func TestPersonaFallbackWakesTheOutbox(t *testing.T) {
	t.Parallel()
	w := setup(t)
	sess := w.session()
	id := strconv.FormatInt(sess, 10)
	conn, err := w.pool.Acquire(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(w.ctx, "LISTEN "+store.WakeChannel); err != nil {
		t.Fatal(err)
	}
	outbox, unsubscribe := w.store.NewListener().Subscribe(store.WakeOutbox) // never Run
	defer unsubscribe()

	first, err := w.store.PersonaFallback(w.ctx, sess, "members speak through me")
	if err != nil || !first {
		t.Fatalf("PersonaFallback = %v, %v; want the first time", first, err)
	}
	select {
	case got := <-outbox:
		if got != id {
			t.Errorf("local wake %q, want %q", got, id)
		}
	default:
		t.Fatal("no outbox wake when PersonaFallback returned")
	}
	ctx, cancel := context.WithTimeout(w.ctx, guard)
	defer cancel()
	n, err := conn.Conn().WaitForNotification(ctx)
	if err != nil {
		t.Fatalf("no NOTIFY: %v", err)
	}
	if want := string(store.WakeOutbox) + ":" + id; n.Payload != want {
		t.Errorf("NOTIFY %q, want %q", n.Payload, want)
	}

	again, err := w.store.PersonaFallback(w.ctx, sess, "members speak through me")
	if err != nil || again {
		t.Fatalf("PersonaFallback again = %v, %v; want not the first time", again, err)
	}
	select {
	case got := <-outbox:
		t.Errorf("a wake %q with no notice queued", got)
	default:
	}
	var notices int
	if err := w.pool.QueryRow(w.ctx, `SELECT count(*) FROM outbox WHERE session_id = $1 AND kind = 'notice'`, sess).Scan(&notices); err != nil || notices != 1 {
		t.Errorf("notices = %d, %v; want 1", notices, err)
	}
}
