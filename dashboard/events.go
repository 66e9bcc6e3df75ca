package dashboard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// hub tells the open event streams that what they show changed. It
// rides the store's wake-ups (a session id, or "*") and, while anyone
// watches, polls the store's Changes every poll: the new signals'
// sessions and the sessions with messages waiting to be posted, since
// claims, progress and sent messages wake nobody. No write of callon's
// notifies for the dashboard. A stream hears only of the guilds its
// viewer may see (or of its one team).
type hub struct {
	store Store
	poll  time.Duration

	mu      sync.Mutex
	subs    map[*sub]struct{}
	guildOf map[int64]string // session id → guild: it never changes
}

// sub is one open stream: a team's, or the guilds' (nil: every guild).
type sub struct {
	session int64
	guilds  map[string]bool
	all     bool
	ch      chan struct{} // one pending "changed", coalesced
}

func newHub(st Store, poll time.Duration) *hub {
	return &hub{store: st, poll: poll, subs: map[*sub]struct{}{}, guildOf: map[int64]string{}}
}

func (h *hub) subscribe(s *sub) func() {
	s.ch = make(chan struct{}, 1)
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
	}
}

func (h *hub) watched() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs) > 0
}

// maxGuildCache bounds the session → guild cache.
const maxGuildCache = 10000

// run delivers changes until ctx ends.
func (h *hub) run(ctx context.Context, wake <-chan string, log *slog.Logger) error {
	t := time.NewTicker(h.poll)
	defer t.Stop()
	cursor := int64(-1) // unknown until someone watches
	waiting := map[int64]bool{}
	seen := map[int64]bool{} // signals reported (or known at the start)
	failing := 0             // reads of changes failed in a row
	for {
		var sessions []int64
		all := false
		select {
		case <-ctx.Done():
			return nil
		case p, ok := <-wake:
			if !ok {
				wake = nil
				continue
			}
			if id, err := strconv.ParseInt(p, 10, 64); err == nil {
				sessions = []int64{id}
			} else {
				all = true
			}
		case <-t.C:
			if !h.watched() {
				cursor = -1
				clear(seen)
				clear(waiting)
				continue
			}
			qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			c, err := h.store.Changes(qctx, cursor)
			cancel()
			if err != nil {
				// Said once per run of failures (every 2 s otherwise, for
				// as long as Postgres is away), and its end once.
				if failing++; failing == 1 && ctx.Err() == nil {
					log.Warn("dashboard: reading changes failed; live updates wait", "err", err)
				}
				continue
			}
			if failing > 0 {
				log.Info("dashboard: reading changes again", "failed_reads", failing)
				failing = 0
			}
			first := cursor < 0
			cursor = c.Cursor
			now := map[int64]bool{}
			for _, id := range c.Waiting {
				now[id] = true
				if !waiting[id] {
					sessions = append(sessions, id)
				}
			}
			for id := range waiting {
				if !now[id] {
					sessions = append(sessions, id)
				}
			}
			waiting = now
			fresh := newSignals(seen, c.Signals)
			sessions = append(sessions, fresh...)
			// The first read after someone started watching reports its
			// look-back as known, not new: every stream is told to look
			// again instead, so that a change made between a stream's
			// start and this read, and woken for by no one, still shows.
			all = c.Overflow || first
		}
		if !h.watched() || (len(sessions) == 0 && !all) {
			continue
		}
		h.deliver(ctx, sessions, all, log)
	}
}

// newSignals marks the signals read as seen and returns the sessions of
// those not seen before. Ids below the lowest one read are forgotten:
// no later read starts below this one's start, and every known id from
// there on was read.
func newSignals(seen map[int64]bool, read []SignalRef) []int64 {
	var sessions []int64
	for _, r := range read {
		if !seen[r.ID] {
			seen[r.ID] = true
			sessions = append(sessions, r.SessionID)
		}
	}
	if len(read) > 0 {
		for id := range seen {
			if id < read[0].ID {
				delete(seen, id)
			}
		}
	}
	return sessions
}

// deliver tells the streams concerned by sessions (all: every stream).
func (h *hub) deliver(ctx context.Context, sessions []int64, all bool, log *slog.Logger) {
	guilds := map[string]bool{}
	ids := map[int64]bool{}
	if !all {
		h.mu.Lock()
		var missing []int64
		for _, id := range sessions {
			ids[id] = true
			if g, ok := h.guildOf[id]; ok {
				guilds[g] = true
			} else {
				missing = append(missing, id)
			}
		}
		h.mu.Unlock()
		if len(missing) > 0 {
			qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			found, err := h.store.SessionGuilds(qctx, missing)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("dashboard: reading sessions' guilds failed", "err", err)
				}
				all = true
			}
			h.mu.Lock()
			if len(h.guildOf)+len(found) > maxGuildCache {
				clear(h.guildOf)
			}
			for id, g := range found {
				h.guildOf[id] = g
				guilds[g] = true
			}
			h.mu.Unlock()
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		var hit bool
		switch {
		case all:
			hit = true
		case s.session != 0:
			hit = ids[s.session]
		case s.all:
			hit = len(guilds) > 0
		default:
			for g := range guilds {
				hit = hit || s.guilds[g]
			}
		}
		if hit {
			select {
			case s.ch <- struct{}{}:
			default:
			}
		}
	}
}

// Bounds of one event stream.
const (
	streamKeepAlive = 25 * time.Second
	streamGap       = 500 * time.Millisecond // between two events: a burst becomes one
	streamMax       = 30 * time.Minute       // then the browser reconnects, and is checked again
)

// events streams "changed" to a page while what it shows changes: the
// overview's and roles' streams for the viewer's guilds, a team's for
// that team once the viewer may see it. An event carries no data: the
// page reads its live part again, through the same checks as any read.
func (d *Dashboard) events(w http.ResponseWriter, r *http.Request, v viewer) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		d.fail(w, r, http.StatusInternalServerError, "Streaming is not supported here.")
		return
	}
	s := &sub{all: v.Operator}
	if !v.Operator {
		s.guilds = map[string]bool{}
		for _, g := range v.Guilds {
			s.guilds[g] = true
		}
	}
	if team := r.URL.Query().Get("team"); team != "" {
		id, err := strconv.ParseInt(team, 10, 64)
		if err != nil || id <= 0 {
			d.fail(w, r, http.StatusNotFound, "There is no such team.")
			return
		}
		guilds, err := d.store.SessionGuilds(r.Context(), []int64{id})
		if err != nil {
			d.fail(w, r, http.StatusInternalServerError, "Could not read the team.")
			return
		}
		if g, ok := guilds[id]; !ok || !v.allows(g) {
			d.fail(w, r, http.StatusNotFound, "There is no such team.")
			return
		}
		s.session = id
	}
	// The server's ReadTimeout bounds reading a request; a stream is read
	// from no more, and a lapsed read deadline would cancel its context.
	_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	unsubscribe := d.hub.subscribe(s)
	defer unsubscribe()
	// The page was rendered before the stream began: what changed in
	// between is fetched at once (unless a change is pending already).
	select {
	case s.ch <- struct{}{}:
	default:
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 3000\n: connected\n\n"); err != nil {
		return
	}
	flusher.Flush()

	end := time.Unix(v.Expires, 0)
	if limit := d.cfg.Now().Add(streamMax); end.After(limit) {
		end = limit
	}
	deadline := time.NewTimer(time.Until(end))
	defer deadline.Stop()
	keep := time.NewTicker(streamKeepAlive)
	defer keep.Stop()
	for {
		var msg string
		select {
		case <-r.Context().Done():
			return
		case <-deadline.C:
			return
		case <-keep.C:
			msg = ": ping\n\n"
		case <-s.ch:
			msg = "event: changed\ndata: {}\n\n"
		}
		if _, err := fmt.Fprint(w, msg); err != nil {
			return
		}
		flusher.Flush()
		if msg[0] == 'e' {
			gap := time.NewTimer(streamGap)
			select {
			case <-r.Context().Done():
				gap.Stop()
				return
			case <-gap.C:
			}
		}
	}
}

// errNotVisible hides a team the viewer may not see as one that does not
// exist.
var errNotVisible = errors.New("there is no such team")
