package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/internal/proc"
)

// WakeChannel is the one LISTEN/NOTIFY channel of callon. A payload is
// what changed and for which session: the kinds (see Kinds) then the
// session's decimal id, as in "mt:42", or "mt:*" for several sessions;
// WakeAll alone stands for everything.
const WakeChannel = "callon_wake"

// WakeAll is a wake for every kind and every session: notifications
// possibly lost while disconnected. As a session part, "*" is a wake for
// several sessions.
const WakeAll = "*"

// Kinds says what a wake is about, so that each consumer is woken for
// its own work only: a set of the letters below.
type Kinds string

// The kinds of work a wake may announce.
const (
	// WakeMaster: a session's master may have a decision to make (a turn
	// recorded, a round's task ended, a file resolved, a lease freed).
	WakeMaster Kinds = "m"
	// WakeTasks: tasks to claim, or running tasks cancelled or taken back.
	WakeTasks Kinds = "t"
	// WakeOutbox: messages to post.
	WakeOutbox Kinds = "o"
	// WakeFiles: files to fetch.
	WakeFiles Kinds = "f"
	// WakeApprovals: requests for approval decided or ended, to settle.
	WakeApprovals Kinds = "a"
	// WakeWebhooks: webhook events to deliver.
	WakeWebhooks Kinds = "w"
	// WakeEvery is every kind.
	WakeEvery = WakeMaster + WakeTasks + WakeOutbox + WakeFiles + WakeApprovals + WakeWebhooks
)

// has reports whether k shares a kind with other.
func (k Kinds) has(other Kinds) bool { return strings.ContainsAny(string(k), string(other)) }

// union is k with other's kinds added.
func (k Kinds) union(other Kinds) Kinds {
	for _, c := range other {
		if !strings.ContainsRune(string(k), c) {
			k += Kinds(c)
		}
	}
	return k
}

// payloadOf is the NOTIFY payload of a wake of kinds for session part
// (an id or "*").
func payloadOf(kinds Kinds, part string) string { return string(kinds) + ":" + part }

// splitPayload reads a payload: its kinds and session part. WakeAll, and
// a payload of an older callon without kinds, concern every kind.
func splitPayload(payload string) (Kinds, string) {
	kinds, part, ok := strings.Cut(payload, ":")
	if !ok {
		return WakeEvery, payload
	}
	return Kinds(kinds), part
}

// notify queues the wake of kinds for the session ids touched by tx
// (with the kinds the transaction's writes marked on it, see mark). It
// sends exactly one notification, whatever the number of rows; Postgres
// delivers it at commit, and drops it on rollback. Call it just before
// committing, and only when something changed.
func notify(ctx context.Context, tx pgx.Tx, kinds Kinds, sessionIDs ...int64) error {
	sessionIDs = slices.DeleteFunc(slices.Clone(sessionIDs), func(id int64) bool { return id == 0 })
	if len(sessionIDs) == 0 {
		return nil
	}
	w, local := tx.(*wakeTx)
	if local {
		kinds = kinds.union(w.kinds)
	}
	payload := payloadOf(kinds, wakePayload(sessionIDs))
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, WakeChannel, payload); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	if local {
		w.wake(payload)
	}
	return nil
}

// mark records on tx, when it is one of the store's own (begin), that it
// wrote work of kinds: its wake announces them too.
func mark(tx pgx.Tx, kinds Kinds) {
	if w, ok := tx.(*wakeTx); ok {
		w.kinds = w.kinds.union(kinds)
	}
}

// maxWakes bounds the notifications of one transaction: past it, one
// wake for several sessions stands for them all.
const maxWakes = 64

// notifyEach queues one wake of kinds per distinct session id touched by
// tx, in one statement (Postgres delivers them at commit, once each);
// more than maxWakes sessions get one wake for several instead. A wake
// for the sessions concerned, rather than one for several as notify
// sends, keeps every other session's master and workers asleep.
func notifyEach(ctx context.Context, tx pgx.Tx, kinds Kinds, sessionIDs []int64) error {
	w, local := tx.(*wakeTx)
	if local {
		kinds = kinds.union(w.kinds)
	}
	payloads := make([]string, 0, len(sessionIDs))
	seen := make(map[int64]bool, len(sessionIDs))
	for _, id := range sessionIDs {
		if id != 0 && !seen[id] {
			seen[id] = true
			payloads = append(payloads, payloadOf(kinds, strconv.FormatInt(id, 10)))
		}
	}
	switch {
	case len(payloads) == 0:
		return nil
	case len(payloads) > maxWakes:
		payloads = []string{payloadOf(kinds, WakeAll)}
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, p) FROM unnest($2::text[]) p`, WakeChannel, payloads); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	if local {
		for _, p := range payloads {
			w.wake(p)
		}
	}
	return nil
}

// wakePayload is the session id when every id is the same, else WakeAll.
func wakePayload(sessionIDs []int64) string {
	for _, id := range sessionIDs[1:] {
		if id != sessionIDs[0] {
			return WakeAll
		}
	}
	return strconv.FormatInt(sessionIDs[0], 10)
}

// Listener holds one dedicated connection LISTENing on WakeChannel and
// fans wakes out to its subscribers. Notifications sent while it is
// disconnected are lost, so after every (re)connection it wakes every
// subscriber with WakeAll; consumers also poll (see Wait), so a lost
// wake delays work by at most one poll interval.
type Listener struct {
	conn   dedicated
	logger *slog.Logger

	mu      sync.Mutex
	subs    map[chan string]Kinds // the kinds each subscriber is woken for
	running bool

	pid atomic.Uint32

	// local is the store's record of the wakes it delivered itself; the
	// NOTIFY copies of those are skipped.
	local *localWakes

	// idleCheck is how long a wait lasts before the connection is
	// checked; tests shorten it.
	idleCheck time.Duration
}

// NewListener returns a Listener on the store's database. It connects
// outside the pool, so it holds no pooled connection. Call Run.
func (s *Store) NewListener() *Listener {
	cfg := s.pool.Config().ConnConfig
	cfg.RuntimeParams["application_name"] = "callon-listener"
	logger := s.logger.With("component", "listener")
	l := &Listener{
		conn: dedicated{
			name: "listener",
			connect: func(ctx context.Context) (*pgx.Conn, error) {
				return pgx.ConnectConfig(ctx, cfg.Copy())
			},
			logger:     logger,
			minBackoff: 100 * time.Millisecond,
			maxBackoff: 10 * time.Second,
		},
		logger:    logger,
		subs:      make(map[chan string]Kinds),
		idleCheck: 30 * time.Second,
		local:     &s.wakes,
	}
	s.wakes.add(l)
	return l
}

// Subscribe returns a channel of the wakes of kinds (of every kind when
// none is given), each as the session it concerns (a decimal id, or
// WakeAll for several or unknown sessions), and a function that ends the
// subscription (and closes the channel). The channel holds one pending
// wake: a subscriber that falls behind never blocks the listener; its
// pending wake becomes WakeAll when wakes for different sessions pile up.
func (l *Listener) Subscribe(kinds ...Kinds) (<-chan string, func()) {
	ch := make(chan string, 1)
	var want Kinds
	for _, k := range kinds {
		want = want.union(k)
	}
	if want == "" {
		want = WakeEvery
	}
	l.mu.Lock()
	l.subs[ch] = want
	l.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			l.mu.Lock()
			delete(l.subs, ch)
			close(ch)
			l.mu.Unlock()
		})
	}
}

// deliver hands payload to every subscriber of one of its kinds without
// blocking.
func (l *Listener) deliver(payload string) {
	kinds, part := splitPayload(payload)
	l.mu.Lock()
	defer l.mu.Unlock()
	for ch, want := range l.subs {
		if !want.has(kinds) {
			continue
		}
		// Only deliver sends, and it holds mu, so after the drain the
		// buffer has room.
		p := part
		select {
		case old := <-ch:
			if old != p {
				p = WakeAll
			}
		default:
		}
		ch <- p
	}
}

// PID is the server process id of the listening connection, 0 while
// disconnected. For diagnostics and tests.
func (l *Listener) PID() uint32 { return l.pid.Load() }

// Run listens until ctx is done, reconnecting with capped, jittered
// exponential backoff whenever the connection is lost. It returns nil
// when ctx is done, and an error only if it is already running.
func (l *Listener) Run(ctx context.Context) error {
	l.mu.Lock()
	if l.running {
		l.mu.Unlock()
		return errors.New("listener: already running")
	}
	l.running = true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.running = false
		l.mu.Unlock()
	}()

	l.conn.run(ctx, l.listen)
	return nil
}

// listen runs one connection: LISTEN, announce, then wait for
// notifications until an error.
func (l *Listener) listen(ctx context.Context, conn *pgx.Conn, established func()) error {
	defer l.pid.Store(0)
	if _, err := conn.Exec(ctx, "LISTEN "+WakeChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	l.pid.Store(conn.PgConn().PID())
	established()
	l.deliver(WakeAll)

	for {
		wctx, cancel := context.WithTimeout(ctx, l.idleCheck)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if !l.local.seen(n.PID, n.Payload) {
				l.deliver(n.Payload)
			}
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed():
			// Quiet for a while: make sure the connection is still alive,
			// since a dead peer without a reset would otherwise wait forever.
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("ping: %w", err)
			}
		default:
			return fmt.Errorf("wait: %w", err)
		}
	}
}

// Wait blocks until a wake arrives on wake, poll (±20%) passes, or ctx is
// done. It returns the wake's payload, "" after a poll interval, or ctx's
// error. Consumers loop on it and re-check their work either way, so
// nothing waits forever on a lost notification. A nil or closed wake
// channel leaves only the poll.
func Wait(ctx context.Context, wake <-chan string, poll time.Duration) (string, error) {
	t := time.NewTimer(proc.Jitter(poll))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case p, ok := <-wake:
			if !ok {
				wake = nil
				continue
			}
			return p, nil
		case <-t.C:
			return "", nil
		}
	}
}
