package store

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// localWakes hands the wake of a transaction this store committed to the
// store's own listeners as soon as the commit returns, instead of after
// Postgres has delivered the NOTIFY back to this very process: that
// round trip waits behind every other notifying commit on the server
// (Postgres delivers notifications in commit order) and took tens of
// milliseconds on a busy one. Other processes still hear of it through
// the NOTIFY, which is sent as before. The listener skips the NOTIFY's
// copy of a wake it was handed locally, so consumers are woken once.
type localWakes struct {
	mu        sync.Mutex
	listeners []*Listener
	expected  []expectedWake // NOTIFYs whose local copy was delivered (or is about to be)
}

// expectedWake is a NOTIFY this process sent from the backend pid.
type expectedWake struct {
	pid     uint32
	payload string
	at      time.Time
}

// expectFor bounds how long a NOTIFY's copy is waited for: one that has
// not come by then (the listener was disconnected) is forgotten, so a
// backend pid reused by another process later cannot have its wakes
// skipped.
const expectFor = 10 * time.Second

// maxExpected bounds the expected copies kept.
const maxExpected = 1024

func (w *localWakes) add(l *Listener) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.listeners = append(w.listeners, l)
}

// expect records that pid is about to commit a NOTIFY of payload.
func (w *localWakes) expect(pid uint32, payload string) expectedWake {
	e := expectedWake{pid: pid, payload: payload, at: time.Now()}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.expected) >= maxExpected {
		w.expected = slices.Delete(w.expected, 0, len(w.expected)-maxExpected+1)
	}
	w.expected = append(w.expected, e)
	return e
}

// forget drops an expectation whose commit failed.
func (w *localWakes) forget(e expectedWake) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i := slices.Index(w.expected, e); i >= 0 {
		w.expected = slices.Delete(w.expected, i, i+1)
	}
}

// seen reports whether a NOTIFY from pid with payload is the copy of a
// wake delivered locally, and if so consumes its expectation.
func (w *localWakes) seen(pid uint32, payload string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	w.expected = slices.DeleteFunc(w.expected, func(e expectedWake) bool { return now.Sub(e.at) > expectFor })
	for i, e := range w.expected {
		if e.pid == pid && e.payload == payload {
			w.expected = slices.Delete(w.expected, i, i+1)
			return true
		}
	}
	return false
}

// deliver hands payload to every listener of the store.
func (w *localWakes) deliver(payload string) {
	w.mu.Lock()
	ls := slices.Clone(w.listeners)
	w.mu.Unlock()
	for _, l := range ls {
		l.deliver(payload)
	}
}

// wakeTx is a transaction whose wake (see notify) also reaches this
// process's listeners at once when it commits.
type wakeTx struct {
	pgx.Tx
	wakes    *localWakes
	payloads []string // set by notify and notifyEach, each once (as Postgres sends them); none while the transaction wakes nobody
	kinds    Kinds    // of the work the transaction wrote (mark): its wake announces them
}

// wake records that the transaction notified payload.
func (t *wakeTx) wake(payload string) {
	if !slices.Contains(t.payloads, payload) {
		t.payloads = append(t.payloads, payload)
	}
}

// begin starts a transaction whose wake is delivered locally too. Use it
// for the transactions on a turn's critical path.
func (s *Store) begin(ctx context.Context) (*wakeTx, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &wakeTx{Tx: tx, wakes: &s.wakes}, nil
}

// Commit commits, then wakes this process's listeners if the transaction
// notified.
func (t *wakeTx) Commit(ctx context.Context) error {
	if len(t.payloads) == 0 {
		return t.Tx.Commit(ctx)
	}
	pid := t.Conn().PgConn().PID()
	es := make([]expectedWake, len(t.payloads))
	for i, p := range t.payloads {
		es[i] = t.wakes.expect(pid, p)
	}
	if err := t.Tx.Commit(ctx); err != nil {
		// It may have committed all the same (the connection broke): the
		// NOTIFYs then come through the listener, no longer skipped.
		for _, e := range es {
			t.wakes.forget(e)
		}
		return err
	}
	for _, p := range t.payloads {
		t.wakes.deliver(p)
	}
	return nil
}

// queryNotifying runs run, one statement that sends payload with
// pg_notify (a statement is its own transaction), on a connection of the
// pool, and hands payload to this process's listeners once it committed;
// the listener skips the NOTIFY's copy. An error means nothing committed
// (nor was notified).
func (s *Store) queryNotifying(ctx context.Context, payload string, run func(q querier) error) error {
	return s.queryMaybeNotifying(ctx, payload, func(q querier) (bool, error) { return true, run(q) })
}

// queryMaybeNotifying is queryNotifying for a statement that sends
// payload only when it wrote something: run reports whether it did, and
// only then are this process's listeners woken.
func (s *Store) queryMaybeNotifying(ctx context.Context, payload string, run func(q querier) (bool, error)) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	e := s.wakes.expect(conn.Conn().PgConn().PID(), payload)
	notified, err := run(conn)
	if err != nil || !notified {
		s.wakes.forget(e)
		return err
	}
	s.wakes.deliver(payload)
	return nil
}
