package master

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// DispatcherConfig tunes the outbox dispatcher.
type DispatcherConfig struct {
	Owner       string
	Batch       int           // messages claimed at once
	Lease       time.Duration // how long a claimed message is ours
	Poll        time.Duration
	MaxAttempts int // deliveries tried before a message is given up
	Wake        <-chan string
}

// Dispatcher delivers the outbox: every message the team posts is a row
// first, sent with its nonce, and its Discord id recorded after.
type Dispatcher struct {
	cfg   DispatcherConfig
	store Store
	out   Messenger
	log   *slog.Logger
}

// NewDispatcher returns a dispatcher; Run starts it.
func NewDispatcher(cfg DispatcherConfig, store Store, out Messenger, logger *slog.Logger) *Dispatcher {
	cfg.Batch = cmp.Or(cfg.Batch, 20)
	cfg.Lease = cmp.Or(cfg.Lease, time.Minute)
	cfg.Poll = cmp.Or(cfg.Poll, 2*time.Second)
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, 10)
	return &Dispatcher{cfg: cfg, store: store, out: out, log: logger.With("component", "outbox")}
}

// Run delivers pending messages until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) error {
	for {
		n, err := d.Flush(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			d.log.Warn("claim outbox", "err", err)
		}
		if n == d.cfg.Batch {
			continue // there may be more
		}
		poll := time.NewTimer(Jitter(d.cfg.Poll))
		select {
		case <-ctx.Done():
			poll.Stop()
			return nil
		case <-d.cfg.Wake:
		case <-poll.C:
		}
		poll.Stop()
	}
}

// Flush claims one batch and delivers it: channels in parallel, each
// channel's messages in order. It returns how many it claimed.
func (d *Dispatcher) Flush(ctx context.Context) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	msgs, err := d.store.ClaimOutbox(cctx, d.cfg.Owner, d.cfg.Batch, d.cfg.Lease)
	cancel()
	if err != nil || len(msgs) == 0 {
		return 0, err
	}
	byChannel := make(map[string][]OutMessage)
	var order []string
	for _, m := range msgs {
		if _, ok := byChannel[m.ChannelID]; !ok {
			order = append(order, m.ChannelID)
		}
		byChannel[m.ChannelID] = append(byChannel[m.ChannelID], m)
	}
	var wg sync.WaitGroup
	for _, ch := range order {
		wg.Go(func() { d.deliver(ctx, byChannel[ch]) })
	}
	wg.Wait()
	return len(msgs), nil
}

// deliver sends one channel's messages in order; after a failure the rest
// wait too, so parts never arrive out of order.
func (d *Dispatcher) deliver(ctx context.Context, msgs []OutMessage) {
	for i, m := range msgs {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		id, err := d.out.Send(sctx, m)
		cancel()
		wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if err == nil {
			if err := d.store.MarkSent(wctx, m.ID, id); err != nil {
				d.log.Error("record sent message", "outbox_id", m.ID, "err", err)
			}
			// A closing summary is the session's last word: then its
			// thread is archived.
			if m.Kind == OutSummary {
				if err := d.out.Archive(wctx, m.ChannelID); err != nil {
					d.log.Warn("archive thread", "thread_id", m.ChannelID, "err", err)
				}
			}
			wcancel()
			continue
		}
		permanent := errors.Is(err, ErrPermanent) || m.Attempts+1 >= d.cfg.MaxAttempts
		retry := retryDelay(m.Attempts)
		d.log.Warn("send message", "outbox_id", m.ID, "kind", m.Kind, "attempt", m.Attempts+1, "permanent", permanent, "err", err)
		for _, rest := range msgs[i:] {
			p := permanent && rest.ID == m.ID
			if err := d.store.MarkUnsent(wctx, rest.ID, err.Error(), retry, p); err != nil {
				d.log.Error("record unsent message", "outbox_id", rest.ID, "err", err)
			}
		}
		wcancel()
		return
	}
}

// retryDelay backs off exponentially from 1 s to 5 min.
func retryDelay(attempts int) time.Duration {
	d := time.Second << min(attempts, 9)
	return min(d, 5*time.Minute)
}
