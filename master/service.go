package master

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxGoalLen bounds a session's goal.
const MaxGoalLen = 1000

// Service is the entry point the bot calls with what people do in Discord.
type Service struct {
	store  Store
	roster func(ctx context.Context, guildID, channelID string) ([]Role, error)
}

// NewService returns the service. roster resolves the roles available in a
// channel; nil means the built-in defaults.
func NewService(store Store, roster func(ctx context.Context, guildID, channelID string) ([]Role, error)) *Service {
	if roster == nil {
		roster = func(context.Context, string, string) ([]Role, error) { return DefaultRoles(), nil }
	}
	return &Service{store: store, roster: roster}
}

// CheckGoal validates a goal and returns it trimmed; its error is written
// for the user.
func CheckGoal(goal string) (string, error) {
	goal = strings.TrimSpace(goal)
	switch {
	case goal == "":
		return "", errors.New("Please give the team a goal, for example `/callon goal: plan our product launch`.")
	case utf8.RuneCountInString(goal) > MaxGoalLen:
		return "", fmt.Errorf("That goal is %d characters long; please keep it under %d and put details in the thread afterwards.", utf8.RuneCountInString(goal), MaxGoalLen)
	}
	return goal, nil
}

// NewSession is a session about to start in a thread.
type NewSession struct {
	GuildID   string
	ChannelID string // where the roster comes from: the thread's parent
	ThreadID  string
	OwnerID   string
	Goal      string
	ReportTo  string
	// DispatchedBy and DispatchDepth are set for a team another team's
	// master started.
	DispatchedBy   int64
	DispatchedTurn int64
	DispatchDepth  int
	// Brief, when set, is a first turn that sets the team to work at once.
	Brief string
	// Roles picks a subset of the channel's roster by name; nil for all
	// of it. An unknown name is a *RoleError listing the available ones.
	Roles []string
}

// StartSession creates the team and queues its kickoff message.
// ErrSessionActive when the thread already has a team.
func (s *Service) StartSession(ctx context.Context, n NewSession) (Session, []Role, error) {
	goal, err := CheckGoal(n.Goal)
	if err != nil {
		return Session{}, nil, err
	}
	roster, err := s.roster(ctx, n.GuildID, n.ChannelID)
	if err != nil {
		return Session{}, nil, fmt.Errorf("resolve roster: %w", err)
	}
	if len(n.Roles) > 0 {
		if roster, err = PickRoles(roster, n.Roles); err != nil {
			return Session{}, nil, err
		}
	}
	sess, err := s.store.StartSession(ctx, Session{
		GuildID: n.GuildID, ChannelID: n.ChannelID, ThreadID: n.ThreadID,
		OwnerID: n.OwnerID, Goal: goal, State: SessionActive, ReportTo: n.ReportTo,
		DispatchedBy: n.DispatchedBy, DispatchedTurn: n.DispatchedTurn, DispatchDepth: n.DispatchDepth,
	}, roster, Kickoff(goal, n.OwnerID, roster, n.ReportTo, n.DispatchedBy != 0), n.Brief)
	if err != nil {
		return Session{}, nil, err
	}
	return sess, roster, nil
}

// Kickoff is the first message in a team's thread.
func Kickoff(goal, ownerID string, roster []Role, reportTo string, dispatched bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "🚀 **Team assembled** by <@%s>\n**Goal:** %s\n\n**Team**\n", ownerID, Truncate(goal, 600))
	for _, r := range roster {
		fmt.Fprintf(&b, "• **%s** — %s\n", r.Name, Truncate(r.Description, 150))
	}
	switch {
	case dispatched:
		fmt.Fprintf(&b, "\n📨 Dispatched by the team in <#%s>: it reports back there.\n", reportTo)
	case reportTo != "":
		fmt.Fprintf(&b, "\n📨 Reports to <#%s>.\n", reportTo)
	}
	b.WriteString("\nTalk to the team right here: every message goes to the coordinator, who answers or hands work to the team. `/team` shows who is doing what, `/dissolve` ends the session.")
	return Truncate(b.String(), MaxMessageLen)
}

// Incoming is a message posted in Discord.
type Incoming struct {
	ID        string
	GuildID   string
	ChannelID string
	AuthorID  string
	AuthorBot bool
	Content   string
}

// HandleMessage routes a message to its session's master. Messages from
// bots (this one included), outside session threads, or redelivered are
// ignored. It reports whether a new turn was recorded.
func (s *Service) HandleMessage(ctx context.Context, m Incoming) (bool, error) {
	if m.AuthorBot || strings.TrimSpace(m.Content) == "" {
		return false, nil
	}
	sess, err := s.store.ActiveSession(ctx, m.ChannelID)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("find session: %w", err)
	}
	_, created, err := s.store.RecordTurn(ctx, Turn{
		SessionID: sess.ID, MessageID: m.ID, GuildID: m.GuildID, ChannelID: m.ChannelID, AuthorID: m.AuthorID, Content: CleanText(m.Content), State: TurnQueued,
	})
	if err != nil {
		return false, fmt.Errorf("record turn: %w", err)
	}
	return created, nil
}
