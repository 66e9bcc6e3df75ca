package bench

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/callonbot/callon/llm/llmfake"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
)

// scale measures a callon process's memory and goroutines: with no
// session, with DormantSessions active teams that have nothing to do,
// and with ActiveSessions more each answering a message (their master
// calls never answer while it is measured).
func (b *bench) scale(ctx context.Context) ([]StageResult, error) {
	w, err := b.newWorld(ctx, func(llmfake.Request) llmfake.Reply { return llmfake.Hang() })
	if err != nil {
		return nil, err
	}
	defer w.close()
	st, err := store.Open(ctx, w.dbURL, nil)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return nil, err
	}

	// Empty.
	p, err := w.spawn()
	if err != nil {
		return nil, err
	}
	empty, err := p.settled(ctx)
	p.kill()
	if err != nil {
		return nil, err
	}

	// Dormant: the process starts with them (its catch-up reads each).
	if _, err := w.sessions(ctx, st, "dormant", b.sizes.DormantSessions); err != nil {
		return nil, err
	}
	lists := w.dc.AllCalls()["GET /channels/{c}/messages"]
	if p, err = w.spawn(); err != nil {
		return nil, err
	}
	defer p.kill()
	w.wait(func() bool {
		return w.dc.AllCalls()["GET /channels/{c}/messages"] >= lists+b.sizes.DormantSessions
	}, "the catch-up of every dormant thread")
	dormant, err := p.settled(ctx)
	if err != nil {
		return nil, err
	}

	// Active: a message in each, its turn in flight.
	threads, err := w.sessions(ctx, st, "active", b.sizes.ActiveSessions)
	if err != nil {
		return nil, err
	}
	for _, th := range threads {
		w.dc.UserMessage(th, w.dc.UserID(), "[direct] are you there?")
	}
	var open int
	w.wait(func() bool {
		bl, err := st.Backlog(ctx)
		if err != nil {
			return false
		}
		open = bl.Turns[master.TurnQueued] + bl.Turns[master.TurnRunning]
		return open >= len(threads)
	}, "a turn in flight in every active session")
	active, err := p.settled(ctx)
	if err != nil {
		return nil, err
	}

	const mib = 1 << 20
	rss, heap, gor := "callon_process_resident_memory_bytes", "callon_go_memstats_heap_inuse_bytes", "callon_go_goroutines"
	return []StageResult{
		{Name: "scale.empty", Samples: 1, What: "one callon process with no session",
			Values: []Value{{"rss", empty[rss] / mib, "MiB"}, {"heap", empty[heap] / mib, "MiB"}, {"goroutines", empty[gor], ""}}},
		{Name: "scale.dormant", Samples: b.sizes.DormantSessions,
			What: fmt.Sprintf("what %d dormant sessions add to the process (started with them; catch-up done)", b.sizes.DormantSessions),
			Values: []Value{{"rss", (dormant[rss] - empty[rss]) / mib, "MiB"}, {"heap", (dormant[heap] - empty[heap]) / mib, "MiB"},
				{"goroutines", dormant[gor] - empty[gor], ""}}},
		{Name: "scale.active", Samples: b.sizes.ActiveSessions,
			What: fmt.Sprintf("the process with %d more sessions each with a turn in flight (%d open turns)", b.sizes.ActiveSessions, open),
			Values: []Value{{"rss", active[rss] / mib, "MiB"}, {"heap", active[heap] / mib, "MiB"}, {"goroutines", active[gor], ""},
				{"rss added", (active[rss] - dormant[rss]) / mib, "MiB"}}},
	}, nil
}

// settled reads the process's figures once they have stopped moving:
// twice, a second apart, keeping the second.
func (p *proc) settled(ctx context.Context) (map[string]float64, error) {
	if _, err := p.stats(ctx); err != nil {
		return nil, err
	}
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return p.stats(ctx)
}

// sessions starts n teams straight in the store, each in a thread of its
// own in the fake Discord, and returns the threads.
func (w *world) sessions(ctx context.Context, st *store.Store, prefix string, n int) ([]string, error) {
	general := w.dc.ChannelID("general")
	threads := make([]string, n)
	for i := range threads {
		threads[i] = w.dc.AddThread(general, prefix+"-"+strconv.Itoa(i), 11).ID // a public thread
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, th := range threads {
		g.Go(func() error {
			_, err := st.StartSession(ctx, master.Session{GuildID: w.dc.GuildID(), ChannelID: general, ThreadID: th,
				OwnerID: w.dc.UserID(), Goal: fmt.Sprintf("bench %s %d", prefix, i)}, master.DefaultRoles(), "", "", master.SessionCaps{})
			return err
		})
	}
	return threads, g.Wait()
}
