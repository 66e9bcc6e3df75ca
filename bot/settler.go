package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/internal/proc"
	"github.com/callonbot/callon/master"
)

// SettleStore is what the settler needs from Postgres.
type SettleStore interface {
	// UnsettledApprovals lists up to limit requests of scope's sessions
	// decided (or expired, or cancelled) before before, whose posted
	// message still shows buttons.
	UnsettledApprovals(ctx context.Context, scope master.Scope, before time.Time, limit int) ([]master.Approval, error)
	master.ApprovalSettler
}

// SettlerConfig tunes a Settler.
type SettlerConfig struct {
	// Poll is how often decided requests are looked for (IdlePoll with
	// Wake, else 2 s).
	Poll time.Duration
	// Wake announces requests decided, expired or cancelled.
	Wake <-chan string
	// Grace leaves a request just decided by a click to the click's own
	// answer, which edits the message at once.
	Grace time.Duration
	Now   func() time.Time
	// Scope is the sessions whose requests this settler edits.
	Scope master.Scope
}

// Settler keeps each approval request's message showing its outcome,
// its buttons removed, once it is decided: within Poll for a request
// that expired or was cancelled, or whose click could not be answered.
type Settler struct {
	cfg   SettlerConfig
	store SettleStore
	out   master.Messenger
	log   *slog.Logger
	soon  proc.Due // a decision just woken for, once its grace is over
}

// NewSettler returns a settler; Run starts it.
func NewSettler(cfg SettlerConfig, store SettleStore, out master.Messenger, logger *slog.Logger) *Settler {
	cfg.Poll = proc.PollFor(cfg.Poll, cfg.Wake, 2*time.Second)
	cfg.Grace = cmp.Or(cfg.Grace, 2*time.Second)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Settler{cfg: cfg, store: store, out: out, log: logger.With("component", "approvals")}
}

// settleBatch bounds the messages one pass edits.
const settleBatch = 20

// Run edits the message of every decided request that still shows its
// buttons, until ctx ends.
func (a *Settler) Run(ctx context.Context) error {
	// A wake announces a decision that the click's own answer is given
	// Grace to show: look once that is over.
	var wake chan string
	var wg sync.WaitGroup
	defer wg.Wait()
	if a.cfg.Wake != nil {
		wake = make(chan string, 1)
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-a.cfg.Wake:
					a.soon.Set(time.Now().Add(a.cfg.Grace + 100*time.Millisecond))
					select {
					case wake <- "":
					default:
					}
				}
			}
		})
	}
	proc.Drain(ctx, a.settle, settleBatch, a.cfg.Poll, wake, &a.soon, a.log, "settle approvals")
	return nil
}

// settle edits one batch of messages to show their request's outcome. A
// message that cannot be edited any more (its thread archived or
// deleted) counts as settled. A failure ends the pass: the rest wait for
// the next poll.
func (a *Settler) settle(ctx context.Context) (int, error) {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	list, err := a.store.UnsettledApprovals(qctx, a.cfg.Scope, a.cfg.Now().Add(-a.cfg.Grace), settleBatch)
	cancel()
	if err != nil {
		return 0, err
	}
	for i, ap := range list {
		ectx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := a.out.Edit(ectx, ap.ChannelID, ap.MessageID, render.Approval(ap))
		if err == nil || errors.Is(err, master.ErrPermanent) {
			err = a.store.SettleApproval(ectx, ap.ID)
		}
		cancel()
		if err != nil {
			return i, fmt.Errorf("approval %d: %w", ap.ID, err)
		}
	}
	return len(list), nil
}
