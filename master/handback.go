package master

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
)

// reportBack delivers a report for the master and says what happened, as
// the tool's result: refusals are told to the model, not raised.
func (o *Orchestrator) reportBack(ctx context.Context, g Guard, s Session, summary string) string {
	posted, turn := ReportTexts(s, summary, false)
	rep, err := o.store.ReportBack(ctx, g, NewReport{Summary: summary, Posted: posted, Turn: turn, Cap: o.cfg.ReportCap})
	switch {
	case errors.Is(err, ErrPingPong):
		return "Refused: this message is a report from the team you report to; answer it here, do not report back to it within this turn."
	case errors.Is(err, ErrAlreadyReported):
		return "This turn has already sent its report (one report per turn). Now reply to the user."
	case errors.Is(err, ErrReportCapped):
		o.cfg.Metrics.LimitHit(LimitReportCap)
		return fmt.Sprintf("Refused: at most %d reports an hour go between these two teams. Tell the user instead.", o.cfg.ReportCap)
	case err != nil:
		o.log.Error("report back", "session_id", s.ID, "turn_id", g.TurnID, "err", err)
		return "The report could not be delivered because of an internal error; tell the user."
	case rep.Delivery == "callback":
		return "Report sent to the system that started this team. Now reply to the user."
	case rep.Delivery == "injected":
		return fmt.Sprintf("Report delivered to the team in <#%s>; its coordinator takes it from here. Now reply to the user.", s.ReportTo)
	default:
		return fmt.Sprintf("Report posted in <#%s>. Now reply to the user.", s.ReportTo)
	}
}

// dispatch starts a team in another channel that reports back to this
// session's thread, and says what happened. The turn's author (for a
// turn without one, a report's or a brief's, the team's owner) must be
// able to see and post in that channel, and be allowed to start teams
// there: a message, or a prompt injected into one, cannot make the team
// reach a channel its author cannot.
func (o *Orchestrator) dispatch(ctx context.Context, from Session, turn Turn, ref, goal string) string {
	turnID := turn.ID
	log := o.log.With("session_id", from.ID, "turn_id", turnID)
	if from.DispatchDepth >= o.cfg.DispatchDepth {
		o.cfg.Metrics.LimitHit(LimitDispatchDepth)
		return "Refused: this team was itself dispatched, and dispatched teams cannot dispatch further."
	}
	ch, err := o.cfg.Channels.Resolve(ctx, from.GuildID, ref)
	switch {
	case errors.Is(err, ErrNotFound):
		return fmt.Sprintf("Refused: there is no channel %q in this server.", ref)
	case err != nil:
		log.Warn("resolve channel", "ref", ref, "err", err)
		return "Refused: the channel could not be looked up; try again later."
	case ch.Thread:
		return fmt.Sprintf("Refused: <#%s> is a thread; dispatch to a text channel, where a new thread is opened.", ch.ID)
	}
	// A turn run again after a crash finds the team it already started.
	if prev, err := o.store.DispatchedByTurn(ctx, turnID, ch.ID); err == nil {
		return fmt.Sprintf("This message already started the team in <#%s> on: %s. It reports back to this thread.", prev.ThreadID, prev.Goal)
	} else if !errors.Is(err, ErrNotFound) {
		log.Error("find dispatched team", "err", err)
		return "Refused: internal error; try again later."
	}
	l, err := Launcher{Service: o.cfg.Service, Channels: o.cfg.Channels, Guilds: o.cfg.Guilds, Archive: o.cfg.Archive, Log: o.log}.Launch(ctx, Launch{
		Entrance: FromDispatch, GuildID: from.GuildID, Channel: ch.ID, UserID: cmp.Or(turn.AuthorID, from.OwnerID),
		Who: "the person who sent this message", OwnerID: from.OwnerID, Goal: goal, From: &from, Turn: turnID,
	})
	var ce *CapError
	switch {
	case errors.As(err, &ce):
		o.cfg.Metrics.LimitHit(LimitActiveSessions)
		return "Refused: " + ErrorMessage(err)
	case ErrorCode(err) == EInternal:
		log.Error("dispatch", "err", err)
		return "Refused: internal error; try again later."
	case err != nil:
		return "Refused: " + ErrorMessage(err)
	}
	return fmt.Sprintf("Started a team in <#%s> (in <#%s>, roles: %s) on: %s. It reports back to this thread; its report will come to you as a new message.",
		l.Session.ThreadID, ch.ID, strings.Join(RoleNames(l.Roster), ", "), l.Session.Goal)
}
