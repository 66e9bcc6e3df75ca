package proc

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// IdlePoll is how often a consumer woken by the store's notifications
// looks for work when none woke it: a safety net for a wake lost while
// the listener reconnected (it then wakes everyone anyway). Work that
// comes due by time (a retry, a backoff) is waited for with a timer of
// its own (see Due), so the net can be wide: an idle process sends less
// than a statement a second.
const IdlePoll = 10 * time.Second

// PollFor is the fallback poll of a consumer: poll when set, else
// IdlePoll when it is woken by notifications, else def.
func PollFor(poll time.Duration, wake <-chan string, def time.Duration) time.Duration {
	switch {
	case poll > 0:
		return poll
	case wake != nil:
		return IdlePoll
	}
	return def
}

// Due holds the times a consumer has work coming due by itself (retries
// it put off), so that its loop wakes at each rather than at its next
// poll. The zero value has none; it is safe for concurrent use.
type Due struct {
	mu sync.Mutex
	at []time.Time // sorted; at most maxDue
}

// maxDue bounds the times kept: past it, the latest are dropped (the poll
// finds their work).
const maxDue = 64

// Set records that work comes due at t.
func (d *Due) Set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i, _ := slices.BinarySearchFunc(d.at, t, func(a, b time.Time) int { return a.Compare(b) })
	d.at = slices.Insert(d.at, i, t)
	if len(d.at) > maxDue {
		d.at = d.at[:maxDue]
	}
}

// Wait is how long to wait, at most poll, for the work that comes due
// next; the times passed are forgotten (the flush before the wait found
// their work).
func (d *Due) Wait(poll time.Duration) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	i := 0
	for i < len(d.at) && !d.at[i].After(now) {
		i++
	}
	d.at = d.at[i:]
	if len(d.at) == 0 {
		return poll
	}
	return min(poll, d.at[0].Sub(now))
}

// Drain runs flush until ctx ends: at once again while flush finds a full
// batch (there may be more), else after a wake, the time work comes due
// (soon, when not nil) or a jittered poll. A failed flush is logged,
// never fatal. It is the loop of the webhook sender, the file fetcher and
// the approvals' settler, whose work is claimed from the store in
// batches.
func Drain(ctx context.Context, flush func(context.Context) (int, error), batch int, poll time.Duration, wake <-chan string, soon *Due, log *slog.Logger, what string) {
	for {
		n, err := flush(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log.Warn(what, "err", err)
		}
		if err == nil && n == batch {
			continue
		}
		wait := Jitter(poll)
		if soon != nil {
			wait = soon.Wait(wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// Every runs f after each wait of d (jittered, from when f last returned)
// until ctx ends: the loop of the background sweeps (dormancy,
// retention).
func Every(ctx context.Context, d time.Duration, f func(context.Context)) {
	for {
		t := time.NewTimer(Jitter(d))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
			f(ctx)
		}
	}
}

// claimTimeout bounds the statement that claims a batch.
const claimTimeout = 10 * time.Second

// Claim is one pass of a background sender: claim a batch (within 10 s)
// and hand each item to each at once, waiting for all of them; it
// returns how many it claimed, for Drain to know a full batch.
func Claim[T any](ctx context.Context, claim func(context.Context) ([]T, error), each func(context.Context, T)) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, claimTimeout)
	items, err := claim(cctx)
	cancel()
	if err != nil || len(items) == 0 {
		return 0, err
	}
	FanOut(ctx, items, each)
	return len(items), nil
}

// FanOut runs each on every item at once and waits for all of them.
func FanOut[T any](ctx context.Context, items []T, each func(context.Context, T)) {
	var wg sync.WaitGroup
	for _, it := range items {
		wg.Go(func() { each(ctx, it) })
	}
	wg.Wait()
}
