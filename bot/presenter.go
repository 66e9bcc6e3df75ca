package bot

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/internal/proc"
	"github.com/callonbot/callon/master"
)

// PresenterConfig tunes the status messages.
type PresenterConfig struct {
	Tick        time.Duration // how often turns are looked at
	MinEdit     time.Duration // at most one edit per status message this often
	TypingEvery time.Duration // the typing indicator lasts about 10 s
	Now         func() time.Time
	Prices      master.Prices // for the cost a settled status message shows
	// Wake announces turns recorded: with it, a presenter that has no
	// turn to show sleeps until one comes (or Idle passes) instead of
	// looking every Tick.
	Wake  <-chan string
	Idle  time.Duration // proc.IdlePoll by default
	Scope master.Scope  // the sessions whose status this presenter shows
}

// settleAnyway is how long a status message waits for a reply that may
// never be delivered before it settles anyway.
const settleAnyway = 10 * time.Minute

// StatusStore is what the status presenter needs from Postgres.
type StatusStore interface {
	// ActiveTurns lists running turns of scope's sessions with their
	// tasks, and ended turns
	// whose status message is not settled yet, for status messages.
	ActiveTurns(ctx context.Context, scope master.Scope) ([]master.TurnStatus, error)
	// SetStatusMessage records the turn's status message.
	SetStatusMessage(ctx context.Context, turnID int64, messageID string) error
	// SettleStatus records that the turn's status message shows its end.
	SettleStatus(ctx context.Context, turnID int64) error
}

// Presenter shows the team at work: the typing indicator while a turn
// runs, and one status message per turn listing its subtasks by role,
// state, progress and elapsed time (never their results), settled when the
// reply is sent.
type Presenter struct {
	cfg   PresenterConfig
	store StatusStore
	out   master.Messenger
	log   *slog.Logger

	shown map[int64]shown // by turn id; only the Run goroutine touches it
}

type shown struct {
	text   string
	edited time.Time
	typed  time.Time
}

// NewPresenter returns a presenter; Run starts it.
func NewPresenter(cfg PresenterConfig, store StatusStore, out master.Messenger, logger *slog.Logger) *Presenter {
	cfg.Tick = cmp.Or(cfg.Tick, time.Second)
	cfg.MinEdit = cmp.Or(cfg.MinEdit, 2*time.Second)
	cfg.TypingEvery = cmp.Or(cfg.TypingEvery, 8*time.Second)
	cfg.Idle = cmp.Or(cfg.Idle, proc.IdlePoll)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Presenter{cfg: cfg, store: store, out: out, log: logger.With("component", "status"), shown: make(map[int64]shown)}
}

// Run updates status messages until ctx ends: every Tick while turns
// are at work or unsettled. With nothing to show and a Wake, it sleeps
// until a turn is recorded, then looks a Tick later (a turn answered
// within a Tick gets no status message: it needs none).
func (p *Presenter) Run(ctx context.Context) error {
	busy := true
	for {
		wait, wake := p.cfg.Tick, (<-chan string)(nil)
		if !busy && p.cfg.Wake != nil {
			wait, wake = p.cfg.Idle, p.cfg.Wake
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-wake:
			busy = true // look a Tick from now
		case <-t.C:
			busy = p.tick(ctx)
		}
		t.Stop()
	}
}

// tick shows every active turn's status; it reports whether there was
// any to show (or it could not tell).
func (p *Presenter) tick(ctx context.Context) bool {
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	turns, err := p.store.ActiveTurns(qctx, p.cfg.Scope)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("list active turns", "err", err)
		}
		return true
	}
	seen := make(map[int64]bool, len(turns))
	for _, ts := range turns {
		seen[ts.Turn.ID] = true
		p.show(ctx, ts)
	}
	for id := range p.shown {
		if !seen[id] {
			delete(p.shown, id)
		}
	}
	return len(turns) > 0
}

func (p *Presenter) show(ctx context.Context, ts master.TurnStatus) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	now := p.cfg.Now()
	id := ts.Turn.ID
	st := p.shown[id]
	defer func() { p.shown[id] = st }()
	log := p.log.With("session_id", ts.Turn.SessionID, "turn_id", id)

	if ts.Turn.State != master.TurnRunning {
		// Settled once the reply (or question) is out, or, if it never
		// goes out, once the turn has been over for a while.
		answered := ts.Turn.State == master.TurnCancelled || !ts.RepliedAt.IsZero() || now.Sub(ts.Turn.UpdatedAt) > settleAnyway
		if ts.Turn.StatusMessageID == "" || !answered {
			return
		}
		// A message that cannot be edited any more (its thread archived
		// or deleted) counts as settled too.
		if err := p.out.Edit(ctx, ts.ThreadID, ts.Turn.StatusMessageID, render.Settled(ts, p.cfg.Prices)); err != nil && !errors.Is(err, master.ErrPermanent) {
			log.Warn("settle status message", "err", err)
			return
		}
		if err := p.store.SettleStatus(ctx, id); err != nil {
			log.Warn("record settled status", "err", err)
		}
		return
	}
	if now.Sub(st.typed) >= p.cfg.TypingEvery {
		st.typed = now
		if err := p.out.Typing(ctx, ts.ThreadID); err != nil {
			log.Debug("typing indicator", "err", err)
		}
	}
	if len(ts.Tasks) == 0 {
		return // a direct answer needs no status message
	}
	text := render.Status(ts, now)
	if text == st.text || now.Sub(st.edited) < p.cfg.MinEdit {
		return
	}
	if ts.Turn.StatusMessageID == "" {
		msgID, err := p.out.Send(ctx, master.OutMessage{TurnID: id, SessionID: ts.Turn.SessionID, Kind: master.OutNotice,
			ChannelID: ts.ThreadID, Content: text, Nonce: "st" + strconv.FormatInt(id, 10)})
		if err != nil {
			log.Warn("post status message", "err", err)
			return
		}
		if err := p.store.SetStatusMessage(ctx, id, msgID); err != nil {
			log.Warn("record status message", "err", err)
			return
		}
	} else if err := p.out.Edit(ctx, ts.ThreadID, ts.Turn.StatusMessageID, text); err != nil {
		log.Warn("edit status message", "err", err)
		return
	}
	st.text, st.edited = text, now
}
