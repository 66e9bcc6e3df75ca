package store_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
)

// guard bounds every wait for an observable effect: reaching it means the
// effect never came, not that the machine was slow.
const guard = 30 * time.Second

// listen starts a listener on w's database and returns it with a
// subscription whose first wake (the "*" announcing the connection) has
// been received: from then on, every NOTIFY reaches the subscription.
func (w *world) listen() (*store.Listener, <-chan string) {
	w.t.Helper()
	l := w.store.NewListener()
	store.SetListenerTimings(l, time.Second, 10*time.Millisecond, 100*time.Millisecond)
	wake, unsubscribe := l.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	w.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			w.t.Errorf("Run: got %v, want nil after cancel", err)
		}
		unsubscribe()
	})
	if got := recv(w.t, wake); got != store.WakeAll {
		w.t.Fatalf("first wake: got %q, want %q", got, store.WakeAll)
	}
	return l, wake
}

func recv(t testing.TB, ch <-chan string) string {
	t.Helper()
	select {
	case p := <-ch:
		return p
	case <-time.After(guard):
		t.Fatalf("no wake within %v", guard)
		return ""
	}
}

func TestEnqueueWakesSubscriber(t *testing.T) {
	t.Parallel()
	w := setup(t)
	_, wake := w.listen()
	session := w.session()
	w.enqueue(session, task("a", "1"), task("b", "2"))
	if got, want := recv(t, wake), strconv.FormatInt(session, 10); got != want {
		t.Errorf("got wake %q, want the session id %q", got, want)
	}
}

func TestListenerRecoversAfterBackendTerminated(t *testing.T) {
	t.Parallel()
	w := setup(t)
	l, wake := w.listen()
	pid := l.PID()
	if pid == 0 {
		t.Fatal("got PID 0 while connected, want the backend's")
	}
	var terminated bool
	if err := w.pool.QueryRow(w.ctx, `SELECT pg_terminate_backend($1)`, int64(pid)).Scan(&terminated); err != nil || !terminated {
		t.Fatalf("pg_terminate_backend: got %v, %v, want true", terminated, err)
	}
	// Reconnected: the listener announces it, since wakes may have been lost.
	if got := recv(t, wake); got != store.WakeAll {
		t.Fatalf("after termination: got wake %q, want %q", got, store.WakeAll)
	}
	if got := l.PID(); got == pid || got == 0 {
		t.Errorf("got PID %d after reconnecting, want a new backend (was %d)", got, pid)
	}
	if err := w.store.Notify(w.ctx, "42"); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, wake); got != "42" {
		t.Errorf("got wake %q, want %q", got, "42")
	}
}

func TestOneNotificationPerTransaction(t *testing.T) {
	t.Parallel()
	w := setup(t)
	pc, err := w.pool.Acquire(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	conn := pc.Hijack()
	t.Cleanup(func() { conn.Close(context.Background()) })
	if _, err := conn.Exec(w.ctx, "LISTEN "+store.WakeChannel); err != nil {
		t.Fatal(err)
	}

	s1, s2, s3 := w.session(), w.session(), w.session()
	batch := make([]master.NewTask, 50)
	for i := range batch {
		batch[i] = task("a", "x")
	}
	w.enqueue(s1, batch...)                       // s1
	w.enqueue(s2, task("a", "x"), task("b", "y")) // s2
	w.enqueue(s3, task("a", "x"))                 // s3
	claimed := w.claim("w", 100)                  // no wake: nothing became claimable or ended
	for _, tk := range claimed {
		if tk.SessionID != s1 {
			w.expire(tk.ID)
		}
	}
	if r, _, err := w.store.SweepExpired(w.ctx); err != nil || r != 3 { // *
		t.Fatalf("SweepExpired: got %d, %v, want 3 requeued", r, err)
	}
	if n, err := w.store.CancelSessionTasks(w.ctx, s1, "stop"); err != nil || n != 50 { // s1
		t.Fatalf("CancelSessionTasks: got %d, %v, want 50", n, err)
	}
	if err := w.store.Notify(w.ctx, "end"); err != nil {
		t.Fatal(err)
	}

	var got []string
	ctx, cancel := context.WithTimeout(w.ctx, guard)
	defer cancel()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("WaitForNotification after %v: %v", got, err)
		}
		if n.Channel != store.WakeChannel {
			t.Fatalf("got channel %q, want %q", n.Channel, store.WakeChannel)
		}
		if n.Payload == "end" {
			break
		}
		got = append(got, n.Payload)
	}
	id := func(n int64) string { return strconv.FormatInt(n, 10) }
	every := string(store.WakeEvery) + ":"
	want := []string{"t:" + id(s1), "t:" + id(s2), "t:" + id(s3), every + store.WakeAll, "t:" + id(s1)}
	if !slices.Equal(got, want) {
		t.Errorf("got notifications %q, want one per transaction %q", got, want)
	}
}

func TestWaitPollFallbackFindsWork(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	// Work arrives, but its notification is lost: nobody was listening.
	_, ids := w.enqueue(session, task("a", "1"))
	silent := make(chan string) // never wakes
	for {
		p, err := store.Wait(w.ctx, silent, 5*time.Millisecond)
		if err != nil || p != "" {
			t.Fatalf("Wait: got %q, %v, want a poll (\"\", nil)", p, err)
		}
		if tasks := w.claim("w", 1); len(tasks) == 1 {
			if tasks[0].ID != ids[0] {
				t.Errorf("got task %d, want %d", tasks[0].ID, ids[0])
			}
			return
		}
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	ctx := t.Context()

	ready := make(chan string, 1)
	ready <- "7"
	if p, err := store.Wait(ctx, ready, time.Hour); p != "7" || err != nil {
		t.Errorf("pending wake: got %q, %v, want \"7\", nil", p, err)
	}
	closed := make(chan string)
	close(closed)
	if p, err := store.Wait(ctx, closed, time.Millisecond); p != "" || err != nil {
		t.Errorf("closed channel: got %q, %v, want a poll", p, err)
	}
	if p, err := store.Wait(ctx, nil, time.Millisecond); p != "" || err != nil {
		t.Errorf("nil channel: got %q, %v, want a poll", p, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := store.Wait(cctx, nil, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
}

func TestSubscriptionsCoalesce(t *testing.T) {
	t.Parallel()
	w := setup(t)
	l := w.store.NewListener() // not running: wakes are delivered by hand
	slow, cancelSlow := l.Subscribe()
	other, cancelOther := l.Subscribe()
	defer cancelOther()

	store.Deliver(l, "1")
	store.Deliver(l, "1")
	if got := <-slow; got != "1" {
		t.Errorf("repeated wake: got %q, want %q", got, "1")
	}
	store.Deliver(l, "1")
	store.Deliver(l, "2") // must not block, and must not lose session 1
	if got := <-slow; got != store.WakeAll {
		t.Errorf("mixed wakes: got %q, want %q", got, store.WakeAll)
	}
	if got := <-other; got != store.WakeAll {
		t.Errorf("other subscriber: got %q, want %q", got, store.WakeAll)
	}
	cancelSlow()
	cancelSlow() // idempotent
	if _, ok := <-slow; ok {
		t.Error("got a wake after cancel, want a closed channel")
	}
	store.Deliver(l, "3") // a cancelled subscriber is not delivered to
	if got := <-other; got != "3" {
		t.Errorf("got %q, want %q", got, "3")
	}
}

func TestListenerRunsOnce(t *testing.T) {
	t.Parallel()
	w := setup(t)
	l, _ := w.listen()
	if err := l.Run(w.ctx); err == nil {
		t.Error("second Run: got nil, want an error")
	}
}

// A subscriber is woken only by wakes of its kinds (and by WakeAll, and
// by a payload without kinds), and is handed the session part alone.
func TestSubscribersWakeForTheirKindsOnly(t *testing.T) {
	t.Parallel()
	w := setup(t)
	l := w.store.NewListener() // never Run: wakes are handed to it
	tasks, cancelTasks := l.Subscribe(store.WakeTasks)
	defer cancelTasks()
	outbox, cancelOutbox := l.Subscribe(store.WakeOutbox, store.WakeMaster)
	defer cancelOutbox()
	every, cancelEvery := l.Subscribe()
	defer cancelEvery()
	pending := func(ch <-chan string) string {
		select {
		case p := <-ch:
			return p
		default:
			return ""
		}
	}
	for _, c := range []struct {
		payload              string
		tasks, outbox, every string
	}{
		{"t:7", "7", "", "7"},
		{"om:8", "", "8", "8"},
		{"a:9", "", "", "9"},
		{store.WakeAll, store.WakeAll, store.WakeAll, store.WakeAll},
		{"10", "10", "10", "10"}, // an older callon's payload: every kind
	} {
		store.Deliver(l, c.payload)
		if got := [3]string{pending(tasks), pending(outbox), pending(every)}; got != [3]string{c.tasks, c.outbox, c.every} {
			t.Errorf("wake %q: subscribers of tasks, outbox+master and every kind got %q, want %q", c.payload, got, [3]string{c.tasks, c.outbox, c.every})
		}
	}
}
