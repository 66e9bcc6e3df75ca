package master

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// IdlePoll is how often a consumer woken by the store's notifications
// looks for work when none woke it: a safety net for a wake lost while
// the listener reconnected (it then wakes everyone anyway). Work that
// comes due by time (a retry, a backoff) is waited for with a timer of
// its own (see due), so the net can be wide: an idle process sends less
// than a statement a second.
const IdlePoll = 10 * time.Second

// pollFor is the fallback poll of a consumer: poll when set, else
// IdlePoll when it is woken by notifications, else def.
func pollFor(poll time.Duration, wake <-chan string, def time.Duration) time.Duration {
	switch {
	case poll > 0:
		return poll
	case wake != nil:
		return IdlePoll
	}
	return def
}

// due is the earliest time a consumer has work coming due by itself (a
// retry it put off), so that its loop wakes then rather than at its next
// poll. The zero value has none.
type due struct {
	mu sync.Mutex
	at time.Time
}

// set records that work comes due at t.
func (d *due) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at.IsZero() || t.Before(d.at) || !d.at.After(time.Now()) {
		d.at = t
	}
}

// wait is how long to wait, at most poll, for the work that comes due
// next; a due time passed is forgotten.
func (d *due) wait(poll time.Duration) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at.IsZero() {
		return poll
	}
	left := time.Until(d.at)
	if left <= 0 {
		d.at = time.Time{}
		return 0
	}
	return min(poll, left)
}

// drain runs flush until ctx ends: at once again while flush finds a full
// batch (there may be more), else after a wake, the time work comes due
// (soon, when not nil) or a jittered poll. A failed flush is logged,
// never fatal. It is the loop of the webhook sender, the file fetcher and
// the approvals' settler, whose work is claimed from the store in
// batches.
func drain(ctx context.Context, flush func(context.Context) (int, error), batch int, poll time.Duration, wake <-chan string, soon *due, log *slog.Logger, what string) {
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
			wait = soon.wait(wait)
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
