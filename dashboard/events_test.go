package dashboard

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// guildStore is a Store whose only reads are SessionGuilds.
type guildStore struct {
	Store
	guilds map[int64]string
}

func (g guildStore) SessionGuilds(_ context.Context, ids []int64) (map[int64]string, error) {
	out := map[int64]string{}
	for _, id := range ids {
		if gid, ok := g.guilds[id]; ok {
			out[id] = gid
		}
	}
	return out, nil
}

var _ Store = guildStore{}

// A change reaches the streams of its guild (and the operator's, and its
// team's), never another guild's or another team's.
func TestHubDeliversOnlyToWhoMaySee(t *testing.T) {
	t.Parallel()
	h := newHub(guildStore{guilds: map[int64]string{1: "A", 2: "B", 3: "A"}}, time.Second)
	subs := map[string]*sub{
		"operator": {all: true},
		"admin A":  {guilds: map[string]bool{"A": true}},
		"admin B":  {guilds: map[string]bool{"B": true}},
		"team 1":   {session: 1},
		"team 3":   {session: 3},
	}
	for _, s := range subs {
		defer h.subscribe(s)()
	}
	got := func() map[string]bool {
		out := map[string]bool{}
		for name, s := range subs {
			select {
			case <-s.ch:
				out[name] = true
			default:
			}
		}
		return out
	}
	h.deliver(t.Context(), []int64{1}, false, nil)
	if g := got(); len(g) != 3 || !g["operator"] || !g["admin A"] || !g["team 1"] {
		t.Errorf("a change of team 1 (guild A) reached %v, want the operator, admin A and team 1", g)
	}
	h.deliver(t.Context(), []int64{2}, false, nil)
	if g := got(); len(g) != 2 || !g["operator"] || !g["admin B"] {
		t.Errorf("a change of team 2 (guild B) reached %v, want the operator and admin B", g)
	}
	h.deliver(t.Context(), []int64{99}, false, nil) // gone: no guild
	if g := got(); len(g) != 0 {
		t.Errorf("a change of an unknown team reached %v", g)
	}
	h.deliver(t.Context(), nil, true, nil)
	if g := got(); len(g) != len(subs) {
		t.Errorf("an overflow reached %v, want everyone (each reads through its own checks)", g)
	}
}

// Each signal is reported once however often reads return it, and one
// read late (below a newer id already reported) is reported when it
// comes.
func TestNewSignalsReportsEachOnce(t *testing.T) {
	t.Parallel()
	seen := map[int64]bool{}
	if got := newSignals(seen, []SignalRef{{ID: 10, SessionID: 1}, {ID: 12, SessionID: 2}}); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("first read: %v, want [1 2]", got)
	}
	if got := newSignals(seen, []SignalRef{{ID: 10, SessionID: 1}, {ID: 11, SessionID: 3}, {ID: 12, SessionID: 2}, {ID: 13, SessionID: 2}}); !slices.Equal(got, []int64{3, 2}) {
		t.Errorf("second read: %v, want the late 11's session and 13's: [3 2]", got)
	}
	if got := newSignals(seen, []SignalRef{{ID: 12, SessionID: 2}, {ID: 13, SessionID: 2}}); len(got) != 0 {
		t.Errorf("a read of nothing new: %v, want none", got)
	}
	if seen[10] || seen[11] {
		t.Errorf("seen = %v: ids below the lowest read are never read again, want them forgotten", seen)
	}
}

// changesStore is a Store whose Changes always returns the same signals.
type changesStore struct {
	guildStore
	reads chan struct{} // one value per read
}

func (c changesStore) Changes(context.Context, int64) (Changes, error) {
	select {
	case c.reads <- struct{}{}:
	default:
	}
	return Changes{Cursor: 7, Signals: []SignalRef{{ID: 7, SessionID: 1}}}, nil
}

// The hub's first read after someone starts watching holds only signals
// it reports as known, yet one of them may be a change made after the
// stream began that no wake announced: every stream is told to look
// again.
func TestFirstReadTellsEveryStream(t *testing.T) {
	t.Parallel()
	st := changesStore{guildStore: guildStore{guilds: map[int64]string{1: "A"}}, reads: make(chan struct{}, 1)}
	h := newHub(st, time.Millisecond)
	s := &sub{session: 2} // another team's stream: only "look again" reaches it
	defer h.subscribe(s)()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.run(ctx, nil, nil) }()
	defer func() { cancel(); <-done }()
	select {
	case <-s.ch:
	case <-time.After(30 * time.Second):
		t.Fatal("the first read after the stream began told it nothing")
	}
}

// failingChanges fails its first reads, then reads nothing.
type failingChanges struct {
	guildStore
	mu    sync.Mutex
	fails int
	reads chan struct{}
}

func (f *failingChanges) Changes(context.Context, int64) (Changes, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case f.reads <- struct{}{}:
	default:
	}
	if f.fails > 0 {
		f.fails--
		return Changes{}, errors.New("connection refused")
	}
	return Changes{}, nil
}

// Reads of changes that keep failing (Postgres away) are said once, and
// their end once: not a warning every poll.
func TestFailingChangesAreSaidOnce(t *testing.T) {
	t.Parallel()
	st := &failingChanges{fails: 5, reads: make(chan struct{})}
	h := newHub(st, time.Millisecond)
	defer h.subscribe(&sub{all: true})()
	var out strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &out, mu: &mu}, nil))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- h.run(ctx, nil, log) }()
	for range 8 { // the five failures and three reads after
		<-st.reads
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if w, i := strings.Count(out.String(), "level=WARN"), strings.Count(out.String(), "reading changes again"); w != 1 || i != 1 {
		t.Errorf("%d warnings and %d recoveries logged, want one each:\n%s", w, i, out.String())
	}
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
