package master

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// Starting a team is one use case with four entrances: /callon, a trusted
// bot's mention, the API's dispatch and a master's dispatch tool. Each
// entrance says who asks and where (a Launch) and keeps only what is its
// own (the API's idempotency claim, dispatch's link to its turn, the
// bot's reply); the checks, their order, the thread and undoing it on a
// refusal are Launcher.Launch's, so no entrance can skip one.

// Entrance is where a request to start a team comes from.
type Entrance int

// Entrances.
const (
	// FromCommand is /callon: in a text channel (a thread is opened) or
	// inside a thread without a team (the team binds to it).
	FromCommand Entrance = iota + 1
	// FromBot is a trusted bot's mention of callon: the thread is opened
	// from its message, and the team reports to it.
	FromBot
	// FromAPI is POST /v1/dispatch, for a member the caller names.
	FromAPI
	// FromDispatch is a master's dispatch tool: a team in another channel
	// reporting back to the dispatching thread.
	FromDispatch
)

func (e Entrance) String() string {
	switch e {
	case FromCommand:
		return "command"
	case FromBot:
		return "bot"
	case FromAPI:
		return "api"
	case FromDispatch:
		return "dispatch"
	default:
		return "unknown"
	}
}

// Launch is a request to start a team.
type Launch struct {
	Entrance Entrance
	GuildID  string
	// Channel is where the team works: an id, <#id> or #name of a text
	// channel, where its thread is opened. FromCommand may name a thread
	// without a team, which the team then lives in.
	Channel string
	// UserID is who starts the team; Who is how a refusal names them
	// ("You", "<@id>", "the person who sent this message").
	UserID string
	Who    string
	// Present says the entrance saw UserID act in Channel (a slash
	// command there, a bot's message): Roles are theirs and their right
	// to be there is not looked up again. Otherwise their roles and
	// permissions are looked up, and they must see and post in Channel.
	Present bool
	Roles   []string
	// OwnerID is whose team it is, for the caps, when not UserID: the
	// dispatching team's owner for a dispatched team.
	OwnerID string
	Goal    string
	// Pick is a subset of the channel's roster by name; nil for all of it.
	Pick []string
	// ReportTo is a channel or thread the team reports to ("" none; a
	// bot's team: the channel of its message). The starter and callon
	// must both be able to post there.
	ReportTo string
	// Message (FromBot) is the bot's message the thread is opened from.
	Message string
	// APIKey and CallbackURL (FromAPI): the request's idempotency key
	// and where the team's reports go.
	APIKey      string
	CallbackURL string
	// From and Turn (FromDispatch): the dispatching team and the turn
	// that dispatched; the team reports back to From's thread.
	From *Session
	Turn int64
	// Review, when set, overrides the channel's review mode (/callon's
	// review option).
	Review ReviewMode
}

// who is how a refusal names the starter.
func (l Launch) who() string { return cmp.Or(l.Who, "<@"+l.UserID+">") }

// Launched is a team just started.
type Launched struct {
	Session Session
	Roster  []Role
	Channel Channel // where it works: the thread's parent
}

// MessageThreads opens a thread from a message: the Channels of an
// entrance that starts teams from messages (FromBot) implement it too.
type MessageThreads interface {
	// StartThreadFrom opens a public thread from a message and returns its
	// id (the message's); one opened already counts as opened.
	StartThreadFrom(ctx context.Context, channelID, messageID, name string) (string, error)
}

// Launcher starts teams: every entrance calls Launch.
type Launcher struct {
	Service  *Service
	Channels Channels
	Guilds   Guilds
	// Archive archives a thread a refused start left empty; nil leaves it.
	Archive func(ctx context.Context, threadID string) error
	Log     *slog.Logger
}

// Launch starts a team, after, in this order: the goal; the channel (a
// text channel, or for /callon a thread without a team); the starter's
// right to see and post there; the report channel (the starter and
// callon may post there); the allow lists and caps (CheckStart); the
// roles picked; callon's right to post where the team works. Then it
// opens the thread and starts the session; a thread whose session is
// refused is archived. Refusals are *Errors a person may read.
func (l Launcher) Launch(ctx context.Context, r Launch) (Launched, error) {
	goal, err := CheckGoal(r.Goal)
	if err != nil {
		return Launched{}, err
	}
	ch, err := l.resolve(ctx, r.GuildID, r.Channel, "")
	if err != nil {
		return Launched{}, err
	}
	parent, thread := ch.ID, ""
	switch {
	case ch.Thread && r.Entrance == FromCommand:
		parent, thread = ch.ParentID, ch.ID
		if _, err := l.Service.store.ActiveSession(ctx, thread); err == nil {
			return Launched{}, Errorf(EConflict, "This thread already has an active team: talk to it here, or end it with `/dissolve` first.")
		}
	case ch.Thread:
		return Launched{}, Errorf(EInvalid, "<#%s> is a thread: give a text channel, where the team's thread is opened.", ch.ID)
	case ch.Other:
		return Launched{}, Errorf(EInvalid, "<#%s> is not a text channel: start a team from a text channel (I will open a thread) or from inside a thread.", ch.ID)
	}
	roles := r.Roles
	if !r.Present {
		m, err := l.member(ctx, r, ch, cannotWork)
		if err != nil {
			return Launched{}, err
		}
		roles = m.Roles
	}
	reportTo, err := l.reportTo(ctx, r, ch)
	if err != nil {
		return Launched{}, err
	}
	if err := l.Service.CheckStart(ctx, Starter{GuildID: r.GuildID, ChannelID: parent, UserID: r.UserID, Roles: roles,
		OwnerID: r.OwnerID, Bot: r.Entrance == FromBot}); err != nil {
		return Launched{}, err
	}
	if len(r.Pick) > 0 { // refused before a thread a refusal would leave empty
		roster, err := l.Service.roster(ctx, r.GuildID, parent)
		if err != nil {
			return Launched{}, fmt.Errorf("resolve roster: %w", err)
		}
		if _, err := PickRoles(roster, r.Pick); err != nil {
			return Launched{}, err
		}
	}
	if where := cmp.Or(thread, parent); where != reportTo { // a report channel is checked already
		if err := l.Channels.CanPost(ctx, where); err != nil {
			return Launched{}, &Error{Code: ENotAllowed, Err: err, Message: fmt.Sprintf("I can't post in <#%s>, so the team could not work there.", where)}
		}
	}
	if thread == "" {
		if thread, err = l.openThread(ctx, r, parent, goal); err != nil {
			return Launched{}, err
		}
	}
	n := NewSession{GuildID: r.GuildID, ChannelID: parent, ThreadID: thread, OwnerID: cmp.Or(r.OwnerID, r.UserID), Goal: goal,
		Roles: r.Pick, ReportTo: reportTo, APIKey: r.APIKey, CallbackURL: r.CallbackURL, Brief: brief(r, goal, parent, reportTo),
		Review: r.Review}
	switch r.Entrance {
	case FromBot:
		n.RequestedByBot, n.RequestMessageID = r.UserID, r.Message
	case FromDispatch:
		n.DispatchedBy, n.DispatchedTurn, n.DispatchDepth = r.From.ID, r.Turn, r.From.DispatchDepth+1
	}
	sess, roster, err := l.Service.StartSession(ctx, n)
	if err != nil {
		// The thread is ours unless another team has it: a bot's request
		// handled already by another process.
		if thread != ch.ID && !errors.Is(err, ErrSessionActive) {
			l.archive(ctx, thread)
		}
		return Launched{}, err
	}
	l.log().Info("session started", "entrance", r.Entrance.String(), "session_id", sess.ID, "guild_id", r.GuildID,
		"thread_id", thread, "roles", len(roster))
	return Launched{Session: sess, Roster: roster, Channel: Channel{ID: parent, GuildID: r.GuildID}}, nil
}

func (l Launcher) log() *slog.Logger {
	if l.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l.Log
}

// resolve finds a channel of the guild; field, when set, names the
// request's field in a refusal.
func (l Launcher) resolve(ctx context.Context, guildID, ref, field string) (Channel, error) {
	if field != "" {
		field += ": "
	}
	ch, err := l.Channels.Resolve(ctx, guildID, ref)
	switch {
	case errors.Is(err, ErrNotFound):
		return Channel{}, Errorf(ENotFound, "%sthere is no channel %q in this server (or I cannot see it).", field, ref)
	case err != nil:
		return Channel{}, &Error{Code: EUnavailable, Err: err, Message: fmt.Sprintf("%sthe channel could not be looked up just now; please try again.", field)}
	}
	return ch, nil
}

// member looks the starter up in ch and checks they may see and post
// there; cannot is the refusal when not (a format of who and the channel).
func (l Launcher) member(ctx context.Context, r Launch, ch Channel, cannot string) (GuildMember, error) {
	m, err := l.Guilds.GuildMember(ctx, r.GuildID, ch.ID, r.UserID)
	switch {
	case errors.Is(err, ErrNotFound):
		return m, Errorf(ENotFound, "%s is not a member of this server.", r.who())
	case err != nil:
		return m, &Error{Code: EUnavailable, Err: err,
			Message: fmt.Sprintf("I could not check whether %s may post in <#%s>; please try again.", r.who(), ch.ID)}
	case !MayPost(m.Permissions, ch.Thread):
		return m, &Error{Code: ENotAllowed, Err: ErrNotAllowed, Message: fmt.Sprintf(cannot, r.who(), ch.ID)}
	}
	return m, nil
}

// Refusals of a starter who may not post where the team would be.
const (
	cannotWork   = "%s cannot see and post in <#%s>, so a team may not work there for them."
	cannotReport = "%s can't post in <#%s>, so the team may not report there either."
)

// reportTo checks where the team reports to and returns its id ("" for
// nowhere): a dispatched team reports to the dispatching thread; a bot's,
// by default, to the channel of its message.
func (l Launcher) reportTo(ctx context.Context, r Launch, ch Channel) (string, error) {
	ref := r.ReportTo
	switch {
	case r.Entrance == FromDispatch:
		return r.From.ThreadID, nil
	case r.Entrance == FromBot && ref == "":
		ref = ch.ID
	case ref == "":
		return "", nil
	}
	rt := ch
	if ref != ch.ID {
		// The team's own channel was checked already (or the starter acted
		// there): another one is looked up, and the starter checked in it.
		var err error
		if rt, err = l.resolve(ctx, r.GuildID, ref, "report_to"); err != nil {
			return "", err
		}
		if _, err := l.member(ctx, r, rt, cannotReport); err != nil {
			return "", err
		}
	}
	if err := l.Channels.CanPost(ctx, rt.ID); err != nil {
		return "", &Error{Code: ENotAllowed, Err: err, Message: fmt.Sprintf("I can't post in <#%s>, so the team could not report there. "+
			"Pick a channel where I may send messages, or give me the **Send Messages** permission there.", rt.ID)}
	}
	return rt.ID, nil
}

// openThread opens the team's thread in channelID: from the bot's
// message for FromBot.
func (l Launcher) openThread(ctx context.Context, r Launch, channelID, goal string) (string, error) {
	var (
		thread string
		err    error
	)
	if mt, ok := l.Channels.(MessageThreads); ok && r.Entrance == FromBot {
		thread, err = mt.StartThreadFrom(ctx, channelID, r.Message, threadName(goal))
	} else {
		thread, err = l.Channels.StartThread(ctx, channelID, threadName(goal))
	}
	var safe *Error
	switch {
	case errors.As(err, &safe):
		return "", err
	case err != nil:
		l.log().Warn("open a thread", "entrance", r.Entrance.String(), "channel_id", channelID, "err", err)
		return "", &Error{Code: EUnavailable, Err: err, Message: fmt.Sprintf("I could not open a thread in <#%s> just now; please try again.", channelID)}
	}
	return thread, nil
}

// archive archives a thread a refused start left empty.
func (l Launcher) archive(ctx context.Context, threadID string) {
	if l.Archive == nil {
		return
	}
	if err := l.Archive(context.WithoutCancel(ctx), threadID); err != nil {
		l.log().Warn("archive the thread of a refused team", "thread_id", threadID, "err", err)
	}
}

// threadName is a team's thread's name: its goal on one line, at most 100
// characters.
func threadName(goal string) string { return oneLine(goal, 100) }

// brief is the first turn that sets a team to work at once: a bot's, the
// API's and a dispatched team's have one; a team started with /callon
// waits for its owner's first message.
func brief(r Launch, goal, channelID, reportTo string) string {
	switch r.Entrance {
	case FromBot:
		return BotBrief(r.UserID, channelID, goal)
	case FromAPI:
		return apiBrief(goal, r.UserID, reportTo != "" || r.CallbackURL != "")
	case FromDispatch:
		return fmt.Sprintf("[Dispatched by the team in <#%s>, working on: %s]\n\nWork on your goal: %s\n\n"+
			"When you have the result the requester needs, send it with report_back, then reply here.",
			r.From.ThreadID, oneLine(r.From.Goal, 300), goal)
	default:
		return ""
	}
}

// apiBrief is the first turn of a team the API started: like a
// dispatched team's, it sets the team to work at once, and says to
// report the result when the team reports anywhere.
func apiBrief(goal, userID string, reports bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[Started through callon's API for <@%s>]\n\nWork on your goal: %s", userID, goal)
	if reports {
		b.WriteString("\n\nWhen you have the result the requester needs, send it with report_back, then reply here.")
	}
	return b.String()
}
