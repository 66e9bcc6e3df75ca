package master

import (
	"context"
	"log/slog"
	"time"

	"github.com/callonbot/callon/internal/proc"
)

// Purged counts the rows one purge deleted.
type Purged struct {
	Sessions, Turns, Tasks, Signals, Outbox, WebhookEvents, Reports, GuildUsage int
	// Notes counts channel notes not remembered since the cutoff.
	Notes int
}

// Total is every row deleted.
func (p Purged) Total() int {
	return p.Sessions + p.Turns + p.Tasks + p.Signals + p.Outbox + p.WebhookEvents + p.Reports + p.GuildUsage + p.Notes
}

// PurgeStore is what retention needs from Postgres.
type PurgeStore interface {
	// PurgeEnded deletes the rows of sessions that ended before cutoff,
	// at most batch rows per statement; ran is false when another
	// process is purging.
	PurgeEnded(ctx context.Context, cutoff time.Time, batch int) (p Purged, ran bool, err error)
}

// RetentionConfig says how long ended sessions are kept.
type RetentionConfig struct {
	Keep  time.Duration // how long after it ended a session's rows are kept; 0: for ever
	Every time.Duration // how often to purge; default a tenth of Keep, from a second to an hour
	Batch int           // rows per statement; default 500
}

// Retention deletes, in the background, the rows of sessions that ended
// longer ago than it keeps them, in every process but one at a time.
type Retention struct {
	cfg   RetentionConfig
	store PurgeStore
	log   *slog.Logger
}

// NewRetention returns the retention job; Run starts it.
func NewRetention(cfg RetentionConfig, store PurgeStore, logger *slog.Logger) *Retention {
	if cfg.Every <= 0 {
		cfg.Every = min(max(cfg.Keep/10, time.Second), time.Hour)
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 500
	}
	return &Retention{cfg: cfg, store: store, log: logger.With("component", "retention")}
}

// Run purges at once, then every cfg.Every (jittered), until ctx ends. It
// does nothing when Keep is 0. A failed purge is logged and tried again
// at the next tick.
func (r *Retention) Run(ctx context.Context) error {
	if r.cfg.Keep <= 0 {
		return nil
	}
	r.purge(ctx)
	proc.Every(ctx, r.cfg.Every, r.purge)
	return nil
}

func (r *Retention) purge(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	p, ran, err := r.store.PurgeEnded(ctx, time.Now().Add(-r.cfg.Keep), r.cfg.Batch)
	switch {
	case err != nil && ctx.Err() == nil:
		r.log.Warn("purge ended sessions", "err", err)
	case ran && p.Total() > 0:
		r.log.Info("purged ended sessions", "sessions", p.Sessions, "turns", p.Turns, "tasks", p.Tasks,
			"signals", p.Signals, "outbox", p.Outbox, "webhook_events", p.WebhookEvents, "reports", p.Reports, "guild_usage", p.GuildUsage, "notes", p.Notes)
	}
}
