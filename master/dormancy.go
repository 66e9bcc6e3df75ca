package master

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/callonbot/callon/internal/proc"
)

// A team is dormant once it has been idle for a while (DormancyConfig.Idle)
// or its thread was archived: it keeps its thread, but counts against
// no cap, and its thread is read at a READY only when it has news. The
// next message in its thread wakes it, if the caps let it then.

// wake wakes a dormant session for a message in its thread. It returns
// what the thread is told when a cap keeps it asleep ("" when it woke).
func (s *Service) wake(ctx context.Context, sess Session) (string, error) {
	_, err := s.store.WakeSession(ctx, sess.ID, s.cfg.Caps)
	var capped *CapError
	if errors.As(err, &capped) {
		return wakeRefusal(capped, sess), nil
	}
	if err != nil {
		return "", fmt.Errorf("wake session: %w", err)
	}
	return "", nil
}

// wakeRefusal is what a dormant team's thread is told when a cap keeps it
// asleep.
func wakeRefusal(e *CapError, sess Session) string {
	var text string
	if e.PerUser {
		text = fmt.Sprintf("💤 This team is dormant, and it cannot wake up now: <@%s> already runs %d active teams, the most one person may. "+
			"Once one of them is dissolved (`/dissolve` in its thread), write here again.", sess.OwnerID, e.Limit)
	} else {
		text = fmt.Sprintf("💤 This team is dormant, and it cannot wake up now: this server already has %d active teams, the most allowed. "+
			"Once one is dissolved (`/dissolve` in its thread), write here again.", e.Limit)
	}
	if len(e.Oldest) > 0 {
		text += "\n" + oldestTeams(e.Oldest)[1:]
	}
	return Truncate(text, MaxMessageLen)
}

// ThreadArchived puts a thread's team to sleep once the platform archived the
// thread, unless it is at work (the reply it posts unarchives the thread,
// and the idle sweep takes it later).
func (s *Service) ThreadArchived(ctx context.Context, threadID string) (bool, error) {
	return s.store.SleepSession(ctx, threadID)
}

// dormantNews returns the catch-up points of the dormant teams whose
// thread has a message newer than the latest one callon knows of: each
// woken, or, when a cap keeps it asleep, with the refusal to record its
// messages with. It asks the platform once per guild (its threads not
// archived: a message in an archived thread unarchives it), so a READY
// does not read every dormant thread.
func (s *Service) dormantNews(ctx context.Context, r ThreadReader, handles func(guildID string) bool) ([]CatchUpPoint, error) {
	points, err := s.store.DormantPoints(ctx)
	if err != nil || len(points) == 0 {
		return nil, err
	}
	byGuild := map[string][]CatchUpPoint{}
	for _, p := range points {
		if handles == nil || handles(p.GuildID) {
			byGuild[p.GuildID] = append(byGuild[p.GuildID], p)
		}
	}
	var out []CatchUpPoint
	var errs []error
	for guild, ps := range byGuild {
		active, err := r.ActiveThreads(ctx, guild)
		if err != nil {
			errs = append(errs, fmt.Errorf("active threads of %s: %w", guild, err))
			continue
		}
		for _, p := range ps {
			last, ok := active[p.ThreadID]
			if !ok || !newer(last, p.Last) {
				continue
			}
			sess, err := s.store.ActiveSession(ctx, p.ThreadID)
			if err != nil {
				errs = append(errs, fmt.Errorf("dormant thread %s: %w", p.ThreadID, err))
				continue
			}
			if p.Refusal, err = s.wake(ctx, sess); err != nil {
				errs = append(errs, err)
				continue
			}
			out = append(out, p)
		}
	}
	return out, errors.Join(errs...)
}

// newer reports whether snowflake a is later than b ("" is the earliest).
func newer(a, b string) bool {
	x, okA := ParseSnowflake(a)
	y, okB := ParseSnowflake(b)
	return okA && (!okB || x > y)
}

// DormancyConfig tunes the idle sweep.
type DormancyConfig struct {
	// Idle is how long a team may be idle before it goes dormant
	// (CALLON_SESSION_IDLE); 0 never puts one to sleep.
	Idle time.Duration
	// Every is how often teams are looked at: Idle/10, within a second
	// and an hour, by default.
	Every time.Duration
	Now   func() time.Time
}

// DormancyStore is what the idle sweep needs from Postgres.
type DormancyStore interface {
	// SleepIdle puts to sleep up to limit awake active teams idle since
	// before cutoff, and returns their ids.
	SleepIdle(ctx context.Context, cutoff time.Time, limit int) ([]int64, error)
}

// Dormancy puts idle teams to sleep.
type Dormancy struct {
	cfg   DormancyConfig
	store DormancyStore
	log   *slog.Logger
}

// NewDormancy returns the idle sweep; Run starts it.
func NewDormancy(cfg DormancyConfig, store DormancyStore, logger *slog.Logger) *Dormancy {
	cfg.Every = cmp.Or(cfg.Every, min(max(cfg.Idle/10, time.Second), time.Hour))
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Dormancy{cfg: cfg, store: store, log: logger.With("component", "dormancy")}
}

// sleepBatch and sleepBatches bound one sweep: teams per statement, and
// statements.
const (
	sleepBatch   = 100
	sleepBatches = 100
)

// Run sweeps until ctx ends; with no Idle it does nothing.
func (d *Dormancy) Run(ctx context.Context) error {
	if d.cfg.Idle <= 0 {
		return nil
	}
	proc.Every(ctx, d.cfg.Every, func(ctx context.Context) {
		if n, err := d.Sweep(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("put idle teams to sleep", "slept", n, "err", err)
		}
	})
	return nil
}

// Sweep puts to sleep the teams idle for longer than Idle, and returns
// how many.
func (d *Dormancy) Sweep(ctx context.Context) (int, error) {
	cutoff := d.cfg.Now().Add(-d.cfg.Idle)
	total := 0
	for range sleepBatches {
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ids, err := d.store.SleepIdle(qctx, cutoff, sleepBatch)
		cancel()
		total += len(ids)
		for _, id := range ids {
			d.log.Info("team went dormant", "session_id", id, "idle", d.cfg.Idle)
		}
		if err != nil || len(ids) < sleepBatch {
			return total, err
		}
	}
	return total, nil
}
