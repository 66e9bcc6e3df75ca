package proc

import (
	"context"
	"log/slog"
	"time"
)

// Drain runs flush until ctx ends: at once again while flush finds a full
// batch (there may be more), else after a wake or a jittered poll. A
// failed flush is logged, never fatal. It is the loop of the background
// senders (outbox, webhooks, attachments, approvals' settler), whose work
// is claimed from the store in batches.
func Drain(ctx context.Context, flush func(context.Context) (int, error), batch int, poll time.Duration, wake <-chan string, log *slog.Logger, what string) {
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
		t := time.NewTimer(Jitter(poll))
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
