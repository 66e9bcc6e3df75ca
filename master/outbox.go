package master

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/callonbot/callon/internal/proc"
)

// OutboxConfig tunes the outbox sender.
type OutboxConfig struct {
	Owner string
	Scope Scope         // the sessions whose messages this sender delivers
	Batch int           // messages claimed at once
	Lease time.Duration // how long a claimed message is ours
	// Poll is the fallback when no wake-up comes (proc.IdlePoll with Wake,
	// else 2 s); a retry this sender put off is waited for with a timer.
	Poll time.Duration
	// RetryFor is how long a message that keeps failing for a reason that
	// may pass (5xx, 429, timeouts, network errors) is retried before it
	// is given up; permanent errors end it at once.
	RetryFor time.Duration
	// MaxRetryDelay caps the wait between two tries of a message, so
	// that a message is never much longer than this behind a platform that
	// answers again, even when nothing else is sent meanwhile.
	MaxRetryDelay time.Duration
	// ProbeEvery is how often, while sends fail, one message (the probe)
	// is tried; the others wait behind it, and the first success releases
	// them all (every retry delay shortened to at most ProbeEvery after
	// its message's last try).
	ProbeEvery time.Duration
	// NonceWindow is how long the platform deduplicates a nonce: a message
	// that may have been posted longer ago than this is looked for in
	// its channel before it is sent again.
	NonceWindow time.Duration
	Wake        <-chan string
	Now         func() time.Time
	Metrics     Metrics // nil: NoMetrics
	// Personas records that a team's members cannot post in their own
	// names, and tells the team once; nil: their parts fall back to
	// callon's voice without a word.
	Personas PersonaFallbacks
}

// Outbox delivers the outbox: every message the team posts is a row
// first, sent with its nonce, and its message id recorded after. A
// failure that may pass is retried for as long as RetryFor; a message
// that may already have been posted is never posted twice.
//
// While sends fail for a reason that may pass, it stops sending batches
// and probes instead: one message at a time, every ProbeEvery. The first
// probe the platform answers ends the probing: every retry delay is shortened
// and the batches resume at once, so replies follow the platform's recovery
// within seconds, each channel's messages still in order.
type Outbox struct {
	cfg   OutboxConfig
	store OutboxStore
	out   Messenger
	log   *slog.Logger

	probing atomic.Bool // a send failed and no send succeeded since
	// failedProbes counts the probes of this probing that failed: none
	// when the first one is answered, and then the send that began it
	// failed on its own, the platform never down.
	failedProbes atomic.Int32
	soon         proc.Due // the next retry this sender put off
}

// OutboxStore is what the outbox sender needs from Postgres.
type OutboxStore interface {
	// ClaimOutbox leases up to n deliverable messages of scope's sessions
	// to owner, each channel's in order.
	ClaimOutbox(ctx context.Context, scope Scope, owner string, n int, lease time.Duration) ([]OutMessage, error)
	// MarkSent records the message id of a delivered message.
	MarkSent(ctx context.Context, id int64, discordID string) error
	// MarkUnsent records a send that was tried and failed: retried after
	// retryIn, or given up when permanent.
	MarkUnsent(ctx context.Context, id int64, reason string, retryIn time.Duration, permanent bool) error
	// ReleaseOutbox gives back a claimed message that was not tried.
	ReleaseOutbox(ctx context.Context, m OutMessage) error
	// ProbeOutbox leases to owner one message to try while sends fail:
	// a channel's first pending message, never tried or else tried least
	// recently, whatever its retry delay; ok is false when there is none.
	ProbeOutbox(ctx context.Context, scope Scope, owner string, lease time.Duration) (m OutMessage, ok bool, err error)
	// ShortenWaits brings every pending message's retry forward to at
	// most within after its last try.
	ShortenWaits(ctx context.Context, within time.Duration) (int, error)
	// ReleaseClaims gives back every message owner still holds a claim
	// on (a claim the stop cut short may have committed unseen).
	ReleaseClaims(ctx context.Context, owner string) error
}

// NewOutbox returns the outbox sender; Run starts it.
func NewOutbox(cfg OutboxConfig, store OutboxStore, out Messenger, logger *slog.Logger) *Outbox {
	cfg.Batch = cmp.Or(cfg.Batch, 20)
	cfg.Lease = cmp.Or(cfg.Lease, time.Minute)
	cfg.Poll = proc.PollFor(cfg.Poll, cfg.Wake, 2*time.Second)
	cfg.RetryFor = cmp.Or(cfg.RetryFor, 24*time.Hour)
	cfg.MaxRetryDelay = cmp.Or(cfg.MaxRetryDelay, 30*time.Second)
	cfg.ProbeEvery = cmp.Or(cfg.ProbeEvery, 2*time.Second)
	cfg.NonceWindow = cmp.Or(cfg.NonceWindow, time.Minute)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NoMetrics{}
	}
	return &Outbox{cfg: cfg, store: store, out: out, log: logger.With("component", "outbox")}
}

// Run delivers pending messages until ctx ends: a batch at once again
// while a batch comes back full, else after a wake or a jittered poll;
// while probing, one probe every ProbeEvery (wakes change nothing then:
// new messages wait behind the probe too).
func (d *Outbox) Run(ctx context.Context) error {
	defer func() {
		// A claim cut short by the stop may have committed: give back
		// what this sender still holds, for the next process.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := d.store.ReleaseClaims(rctx, d.cfg.Owner); err != nil {
			d.log.Warn("give back the messages claimed", "err", err)
		}
	}()
	for {
		n, err := d.Flush(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			d.log.Warn("claim outbox", "err", err)
		}
		probing := d.probing.Load()
		if err == nil && n == d.cfg.Batch && !probing {
			continue
		}
		wait, wake := d.soon.Wait(proc.Jitter(d.cfg.Poll)), d.cfg.Wake
		if probing {
			wait, wake = proc.Jitter(d.cfg.ProbeEvery), nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// Probing reports whether the outbox is probing: a send failed for a
// reason that may pass, and none has succeeded since.
func (d *Outbox) Probing() bool { return d.probing.Load() }

// Flush claims one batch and delivers it: channels in parallel, each
// channel's messages in order. While probing, it tries one message
// instead; when the platform answers it, the probing ends, every retry delay
// is shortened, and a batch follows at once. It returns how many
// messages it claimed.
func (d *Outbox) Flush(ctx context.Context) (int, error) {
	if d.probing.Load() {
		probed, err := d.probe(ctx)
		if err != nil || d.probing.Load() {
			return probed, err
		}
		n, err := d.flush(ctx)
		return probed + n, err
	}
	return d.flush(ctx)
}

// flush claims one batch and delivers it.
func (d *Outbox) flush(ctx context.Context) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	msgs, err := d.store.ClaimOutbox(cctx, d.cfg.Scope, d.cfg.Owner, d.cfg.Batch, d.cfg.Lease)
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
	groups := make([][]OutMessage, len(order))
	for i, ch := range order {
		groups[i] = byChannel[ch]
	}
	proc.FanOut(ctx, groups, d.deliver) // each channel's in order, channels at once
	return len(msgs), nil
}

// probe tries the one message ProbeOutbox picks. The platform answering it
// (sent, or refused for good) ends the probing and shortens every wait;
// nothing left to probe ends it too.
func (d *Outbox) probe(ctx context.Context) (int, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	m, ok, err := d.store.ProbeOutbox(cctx, d.cfg.Scope, d.cfg.Owner, d.cfg.Lease)
	cancel()
	if err != nil {
		return 0, err
	}
	if !ok {
		d.probing.Store(false)
		d.failedProbes.Store(0)
		return 0, nil
	}
	d.deliver(ctx, []OutMessage{m})
	if ctx.Err() != nil {
		return 1, nil
	}
	if d.probing.Load() {
		d.failedProbes.Add(1)
		return 1, nil
	}
	if d.failedProbes.Swap(0) == 0 {
		// The first probe was answered: the platform was never down, and
		// what failed failed on its own (a channel of its own trouble). It
		// keeps its own backoff, up to MaxRetryDelay, instead of being
		// tried again within ProbeEvery for its whole retry period.
		d.log.Debug("a send failed, yet the platform answers: no wait shortened")
		return 1, nil
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	n, err := d.store.ShortenWaits(wctx, d.cfg.ProbeEvery)
	if n > 0 {
		d.soon.Set(time.Now().Add(d.cfg.ProbeEvery)) // what was tried a moment ago
	}
	if err != nil {
		// The waits run out by themselves, at most MaxRetryDelay.
		d.log.Warn("shorten the outbox's retry delays", "err", err)
	}
	d.log.Info("messages are delivered again; sending what waited", "waited", n)
	return 1, nil
}

// deliver sends one channel's messages in order. After a failure, the
// rest are given back untried (no attempt counted): they wait behind the
// failed one, so parts never arrive out of order.
func (d *Outbox) deliver(ctx context.Context, msgs []OutMessage) {
	for i, m := range msgs {
		if ctx.Err() != nil || !d.deliverOne(ctx, m) {
			d.release(ctx, msgs[i+1:])
			if ctx.Err() != nil {
				d.release(ctx, msgs[i:i+1])
			}
			return
		}
	}
}

// deliverOne sends one message and records the outcome; it reports
// whether the message is out of the way (sent, or given up).
func (d *Outbox) deliverOne(ctx context.Context, m OutMessage) bool {
	log := d.log.With("outbox_id", m.ID, "kind", m.Kind, "channel_id", m.ChannelID, "session_id", m.SessionID, "turn_id", m.TurnID)
	id, err := d.send(ctx, m)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err == nil {
		d.probing.Store(false)
		d.cfg.Metrics.OutboxDelivered(m.Kind, "sent", d.cfg.Now().Sub(m.CreatedAt))
		if err := d.store.MarkSent(wctx, m.ID, id); err != nil {
			// Not lost: the message is claimed again after its lease and
			// found in the channel instead of being posted twice.
			log.Error("record sent message", "err", err)
		}
		// A closing summary is the session's last word: then its thread
		// is archived.
		if m.Kind == OutSummary {
			if err := d.out.Archive(wctx, m.ChannelID); err != nil {
				log.Warn("archive thread", "err", err)
			}
		}
		return true
	}
	if ctx.Err() != nil {
		return false // shutting down: the caller gives it back untried
	}
	age := d.cfg.Now().Sub(m.CreatedAt)
	// A message refused for good was still answered: the platform is
	// back, and what waits for it to come back need not.
	wasProbing := d.probing.Swap(!errors.Is(err, ErrPermanent))
	permanent := errors.Is(err, ErrPermanent) || age > d.cfg.RetryFor
	retry := proc.Backoff(m.Attempts+1, time.Second, d.cfg.MaxRetryDelay)
	switch {
	case errors.Is(err, ErrPermanent):
		log.Error("message given up: refused for good", "attempt", m.Attempts+1, "err", err)
	case permanent:
		log.Error("message given up: still failing after its retry period", "attempt", m.Attempts+1, "age", age.Round(time.Second), "err", err)
	case wasProbing:
		// Still down: said once, when the probing began.
		log.Debug("send message; still failing", "attempt", m.Attempts+1, "err", err)
	default:
		log.Warn("send message; retrying, one message at a time until one is delivered", "attempt", m.Attempts+1, "retry_in", retry, "err", err)
	}
	result := "retry"
	if permanent {
		result = "failed"
	}
	d.cfg.Metrics.OutboxDelivered(m.Kind, result, 0)
	if !permanent {
		d.soon.Set(time.Now().Add(retry))
	}
	if err := d.store.MarkUnsent(wctx, m.ID, err.Error(), retry, permanent); err != nil {
		log.Error("record unsent message", "err", err)
	}
	return permanent
}

// send posts m, unless it may have been posted already longer ago than
// the platform remembers its nonce: then it is looked for in the channel first,
// and found, it is not posted again.
func (d *Outbox) send(ctx context.Context, m OutMessage) (string, error) {
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A member's part goes through a webhook, which takes no nonce: any
	// earlier send may have landed, however recent.
	if !m.MaybeSentAt.IsZero() && (m.Persona != nil || d.cfg.Now().Sub(m.MaybeSentAt) > d.cfg.NonceWindow) {
		id, err := d.out.Find(sctx, m)
		if err != nil {
			return "", fmt.Errorf("look for an earlier send: %w", err)
		}
		if id != "" {
			d.log.Info("message was posted before; recording it", "outbox_id", m.ID, "message_id", id, "session_id", m.SessionID, "turn_id", m.TurnID)
			return id, nil
		}
	}
	if m.Persona != nil {
		return d.sendAs(sctx, m)
	}
	return d.out.Send(sctx, m)
}

// release gives claimed messages back untried.
func (d *Outbox) release(ctx context.Context, msgs []OutMessage) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, m := range msgs {
		if err := d.store.ReleaseOutbox(wctx, m); err != nil {
			d.log.Warn("give back message", "outbox_id", m.ID, "session_id", m.SessionID, "turn_id", m.TurnID, "err", err)
		}
	}
}
