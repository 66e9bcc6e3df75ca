package master

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Budget is the deployment's token budgets; a guild's admins may change
// them for their guild and for each team (/budget). Zero means none.
type Budget struct {
	SessionTokens    int64 // tokens one team may use
	GuildDailyTokens int64 // tokens one guild's teams may use per UTC day
}

// ErrBudget means a token budget is spent: no model may be called for the
// session until an admin raises it (or, for a guild's daily budget, the
// UTC day ends).
var ErrBudget = errors.New("token budget spent")

// BudgetError says which budget is spent. It is ErrBudget.
type BudgetError struct {
	Guild bool  // the guild's daily budget; else the team's
	Limit int64 // the budget, in tokens
	Used  int64 // what was used of it
	// Held is what model calls in flight hold of it (their worst case,
	// until each settles).
	Held int64
}

func (e *BudgetError) Error() string {
	scope := "team"
	if e.Guild {
		scope = "guild daily"
	}
	if e.Held > 0 {
		return fmt.Sprintf("%s budget of %d tokens spent (%d used, %d held by calls in flight)", scope, e.Limit, e.Used, e.Held)
	}
	return fmt.Sprintf("%s budget of %d tokens spent (%d used)", scope, e.Limit, e.Used)
}

// Busy reports whether only the holds of calls in flight stood in the
// way: what was used is still under the budget (the holds that refused a
// call may have settled since, for less than they held).
func (e *BudgetError) Busy() bool { return e.Used < e.Limit }

// Is makes a BudgetError match ErrBudget.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// BudgetText is what the bot answers, in place of the team, a message it
// cannot afford to answer; err is ErrBudget.
func BudgetText(err error) string {
	var b *BudgetError
	if !errors.As(err, &b) {
		return "This team has used its token budget, so I can't answer. A server admin can raise it with `/budget team`."
	}
	if b.Guild {
		return fmt.Sprintf("This server has used its daily budget of %s tokens, so I can't answer until it resets at midnight UTC. "+
			"A server admin can raise it with `/budget server`.", Tokens(b.Limit))
	}
	return fmt.Sprintf("This team has used its budget of %s tokens, so I can't answer. "+
		"A server admin can raise it with `/budget team` in this thread.", Tokens(b.Limit))
}

// Tokens writes a token count with thousands separators.
func Tokens(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		return "-" + s
	}
	return s
}

// SessionCaps bound the active teams a guild, and each person in it, may
// have at once, /callon and dispatch alike; zero means none. A dispatched
// team counts for the owner of the team that dispatched it.
type SessionCaps struct {
	PerGuild int
	PerUser  int
	// BotPerHour bounds the turns a bot starts in a guild per hour: a
	// team a trusted bot starts counts its brief (ErrBotCapped beyond).
	BotPerHour int
}

// ErrCapped means a new team would exceed a cap on active teams.
var ErrCapped = errors.New("active team cap reached")

// CapError says which cap a new team would exceed. It is ErrCapped.
type CapError struct {
	PerUser bool // the person's cap; else the guild's
	Limit   int
	// Oldest are the person's oldest awake teams in the guild, at most
	// three: the refusal lists them, to dissolve one or let it go
	// dormant.
	Oldest []Session
}

func (e *CapError) Error() string {
	if e.PerUser {
		return fmt.Sprintf("the owner already has %d active teams", e.Limit)
	}
	return fmt.Sprintf("the guild already has %d active teams", e.Limit)
}

// Is makes a CapError match ErrCapped.
func (e *CapError) Is(target error) bool { return target == ErrCapped }

// capText is what a person reads when a cap refuses a team.
func capText(e *CapError) string {
	var text string
	if e.PerUser {
		text = fmt.Sprintf("You already run %d active teams, the most one person may. "+
			"Free a slot by ending one of them with `/dissolve` in its thread, then try again.", e.Limit)
	} else {
		text = fmt.Sprintf("This server already has %d active teams, the most allowed. "+
			"Free a slot by ending an old one with `/dissolve` in its thread, then try again.", e.Limit)
	}
	return Truncate(text+oldestTeams(e.Oldest), MaxMessageLen)
}

// oldestTeams lists teams a person might end, with links to their threads.
func oldestTeams(teams []Session) string {
	if len(teams) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nYour oldest active teams:")
	for _, s := range teams {
		fmt.Fprintf(&b, "\n• %s: %s (started <t:%d:R>)", teamLink(s), oneLine(s.Goal, 80), s.CreatedAt.Unix())
	}
	return b.String()
}

// teamLink is how a message points to a team: its thread, or its number
// for a team in a terminal.
func teamLink(s Session) string {
	if s.Surface == SurfaceTerminal {
		return fmt.Sprintf("team #%d (a terminal's)", s.ID)
	}
	return "<#" + s.ThreadID + ">"
}

// CapRefusal turns a cap refusal into an *Error a person may read; other
// errors are returned as they are.
func CapRefusal(err error) error {
	var c *CapError
	if errors.As(err, &c) {
		return &Error{Code: ELimit, Message: capText(c), Err: err}
	}
	return err
}

// Admission decides whether a message becomes a turn the master answers.
// A message refused is still recorded, as a refused turn, so it is never
// picked up; the thread is told once per burst of refusals (the first
// refused message since the last one admitted queues the notice), never
// once per message. Zero limits mean none; an empty notice posts
// nothing.
type Admission struct {
	// MaxOpen bounds a session's turns queued or being answered.
	MaxOpen int
	// PerMinute bounds the turns one author starts in a guild per minute.
	PerMinute int
	// BotPerHour bounds the turns one bot starts in a guild per hour,
	// teams it starts included (CALLON_REPORT_CAP): two bots answering
	// each other cannot go on past it.
	BotPerHour int
	// Notices for the four reasons a message is refused: the queue is
	// full, its author is over the rate, a bot is over its hourly cap, or
	// the caller refused it.
	QueueFull, RateLimited, BotCapped, Refused string
}

// AccessAction is what an allow list governs.
type AccessAction string

// Access actions.
const (
	AccessStart AccessAction = "start" // starting teams: /callon, and dispatch into a channel
	AccessTalk  AccessAction = "talk"  // talking to a team in its thread
	// AccessTrust names a bot callon listens to (kind AccessUser only):
	// it may start teams by mentioning callon and talk in team threads.
	AccessTrust AccessAction = "trust"
)

// AccessKind is what an allow list entry names.
type AccessKind string

// Access kinds.
const (
	AccessUser    AccessKind = "user"
	AccessRole    AccessKind = "role"
	AccessChannel AccessKind = "channel"
)

// AccessRule allows a user, the members of a role, or a channel, for one
// action in a guild.
type AccessRule struct {
	Action AccessAction
	Kind   AccessKind
	ID     string // the id of the user, role or channel
}

// Access is a guild's allow lists. For an action with no rule everyone
// may; with user or role rules, only those users and the members of
// those roles may; with channel rules, only in those channels (a
// thread: its parent). The two are combined: who, and where.
type Access []AccessRule

// Allows reports whether a member with roles may do action in channelID.
func (a Access) Allows(action AccessAction, userID string, roles []string, channelID string) bool {
	var who, where, whoOK, whereOK bool
	for _, r := range a {
		if r.Action != action {
			continue
		}
		switch r.Kind {
		case AccessUser:
			who, whoOK = true, whoOK || r.ID == userID
		case AccessRole:
			who, whoOK = true, whoOK || slices.Contains(roles, r.ID)
		case AccessChannel:
			where, whereOK = true, whereOK || r.ID == channelID
		}
	}
	return (!who || whoOK) && (!where || whereOK)
}

// Trusts reports whether the allow lists name botID as a trusted bot.
func (a Access) Trusts(botID string) bool {
	return botID != "" && slices.Contains(a, AccessRule{Action: AccessTrust, Kind: AccessUser, ID: botID})
}

// ErrBotCapped means a bot started as many turns in a guild within the
// hour as the cap allows.
var ErrBotCapped = errors.New("bot turn cap reached")

// Rules returns the rules for one action.
func (a Access) Rules(action AccessAction) []AccessRule {
	var out []AccessRule
	for _, r := range a {
		if r.Action == action {
			out = append(out, r)
		}
	}
	return out
}

// notAllowedText is what a person reads whom an allow list refuses.
func notAllowedText(action AccessAction) string {
	if action == AccessTalk {
		return "🔒 This server's admins limit who may talk to callon teams, and where; messages from others here are not answered."
	}
	return "🔒 This server's admins limit who may start callon teams, and where. Ask one of them (`/access show` lists the rules)."
}

// GuildMember is what authorization needs to know of a member: their
// roles, and their permissions, computed by the bot from the guild's roles
// and, in a channel, its overwrites (never taken from an interaction,
// whose permissions are the invoking channel's).
type GuildMember struct {
	Roles       []string
	Permissions int64
}

// Guilds looks members up on the platform.
type Guilds interface {
	// GuildMember returns a member's roles and permissions in a channel
	// (a thread: its parent's), or, for channelID "", the member's
	// guild-level permissions, from their roles only. ErrNotFound when the
	// user is not a member.
	GuildMember(ctx context.Context, guildID, channelID, userID string) (GuildMember, error)
}
