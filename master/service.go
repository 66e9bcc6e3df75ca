package master

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// MaxGoalLen bounds a session's goal.
const MaxGoalLen = 1000

// SessionStore is what the session service needs from Postgres.
type SessionStore interface {
	// StartSession creates the session with its roster and kickoff message
	// in one transaction, and with brief, when not empty, a first turn
	// that sets the team to work at once (a dispatched team). It returns
	// ErrSessionActive when the thread has a session already.
	StartSession(ctx context.Context, s Session, roster []Role, kickoff, brief string) (Session, error)
	// ActiveSession returns the active session of a thread, or ErrNotFound.
	ActiveSession(ctx context.Context, threadID string) (Session, error)
	// CatchUpPoints lists every active session with where its thread's
	// catch-up starts.
	CatchUpPoints(ctx context.Context) ([]CatchUpPoint, error)
	// Notice queues a message in an active session's thread.
	Notice(ctx context.Context, sessionID int64, text string) error
	// RecordTurn stores a user message as a queued turn, idempotently on
	// its message id: created is false when the message was seen before.
	// A turn of the session that waited for the user's answer is closed.
	// The message's files are recorded with it.
	RecordTurn(ctx context.Context, t Turn) (turn Turn, created bool, err error)
	// Roster returns a session's roles.
	Roster(ctx context.Context, sessionID int64) ([]Role, error)
}

// Service is the entry point the bot calls with what people do in Discord.
type Service struct {
	store  SessionStore
	roster func(ctx context.Context, guildID, channelID string) ([]Role, error)
	attach AttachmentPolicy
}

// NewService returns the service. roster resolves the roles available in a
// channel; nil means the built-in defaults.
func NewService(store SessionStore, roster func(ctx context.Context, guildID, channelID string) ([]Role, error)) *Service {
	if roster == nil {
		roster = func(context.Context, string, string) ([]Role, error) { return DefaultRoles(), nil }
	}
	return &Service{store: store, roster: roster}
}

// WithAttachments sets which files of messages are downloaded (the
// policy's defaults otherwise) and returns s.
func (s *Service) WithAttachments(p AttachmentPolicy) *Service {
	s.attach = p
	return s
}

// CheckGoal validates a goal and returns it trimmed; its error is written
// for the user.
func CheckGoal(goal string) (string, error) {
	goal = strings.TrimSpace(goal)
	switch {
	case goal == "":
		return "", Errorf(EInvalid, "Please give the team a goal, for example `/callon goal: plan our product launch`.")
	case utf8.RuneCountInString(goal) > MaxGoalLen:
		return "", Errorf(EInvalid, "That goal is %d characters long; please keep it under %d and put details in the thread afterwards.", utf8.RuneCountInString(goal), MaxGoalLen)
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
	if errors.Is(err, ErrSessionActive) {
		return Session{}, nil, &Error{Code: EConflict, Err: err,
			Message: "This thread already has an active team: talk to it here, or end it with `/dissolve` first."}
	}
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
	ID          string
	GuildID     string
	ChannelID   string
	AuthorID    string
	AuthorBot   bool
	Content     string
	Attachments []IncomingAttachment
}

// empty reports whether the message has neither text nor files.
func (m Incoming) empty() bool { return strings.TrimSpace(m.Content) == "" && len(m.Attachments) == 0 }

// HandleMessage routes a message to its session's master. Messages from
// bots (this one included), outside session threads, without text or
// files, or redelivered are ignored. It returns the message's turn (new,
// or recorded before), or a zero Turn when the message is not for a team.
func (s *Service) HandleMessage(ctx context.Context, m Incoming) (Turn, error) {
	if m.AuthorBot || m.empty() {
		return Turn{}, nil
	}
	sess, err := s.store.ActiveSession(ctx, m.ChannelID)
	if errors.Is(err, ErrNotFound) {
		return Turn{}, nil
	}
	if err != nil {
		return Turn{}, fmt.Errorf("find session: %w", err)
	}
	t, err := s.newTurn(ctx, sess.ID, m.GuildID, m.ChannelID, m)
	if err != nil {
		return Turn{}, err
	}
	t, _, err = s.store.RecordTurn(ctx, t)
	if err != nil {
		return Turn{}, fmt.Errorf("record turn: %w", err)
	}
	return t, nil
}

// newTurn is the queued turn of a message: with its files, planned by
// the attachment policy, and the role it is addressed to, if any.
func (s *Service) newTurn(ctx context.Context, sessionID int64, guildID, channelID string, m Incoming) (Turn, error) {
	t := Turn{SessionID: sessionID, MessageID: m.ID, GuildID: guildID, ChannelID: channelID, AuthorID: m.AuthorID,
		Content: CleanText(m.Content), State: TurnQueued, Attachments: s.attach.Plan(m.Attachments)}
	if addressCandidate(m.Content) != "" {
		roster, err := s.store.Roster(ctx, sessionID)
		if err != nil {
			return t, fmt.Errorf("roster: %w", err)
		}
		t.AddressedTo = Addressee(m.Content, roster)
	}
	return t, nil
}

// CatchUpMax bounds how many messages one thread's catch-up turns into
// turns; the ones beyond are recorded as refused, and one notice in the
// thread says so.
const CatchUpMax = 20

// catchUpWindow is how far before a thread's last recorded message the
// catch-up looks again, for a message whose routing failed while later
// ones got through.
const catchUpWindow = 10 * time.Minute

// catchUpRead bounds how many messages one thread's catch-up reads.
const catchUpRead = 1000

// CatchUpPoint is where a session's catch-up starts reading its thread.
type CatchUpPoint struct {
	SessionID int64
	GuildID   string
	ThreadID  string
	Started   time.Time // when the session started
	// Last is the id of the thread's latest message recorded as a turn;
	// "" when none is.
	Last string
}

// ThreadReader reads Discord threads' history.
type ThreadReader interface {
	// MessagesAfter returns up to limit messages of a channel posted after
	// the message id after, oldest first.
	MessagesAfter(ctx context.Context, channelID, after string, limit int) ([]Incoming, error)
}

// CatchUp records the messages posted in active sessions' threads while
// nothing was listening (a restart, a gateway session that could not be
// resumed): each thread is read from shortly before its last recorded
// message on, and the messages found are routed as if they had just
// arrived, in Discord's order (recording is idempotent, so a message
// seen before changes nothing). At most CatchUpMax turns are started per
// thread. handles says whether this process serves a guild. It returns
// how many turns it recorded; a thread that cannot be read is skipped
// with its error joined to the result.
func (s *Service) CatchUp(ctx context.Context, r ThreadReader, handles func(guildID string) bool) (int, error) {
	points, err := s.store.CatchUpPoints(ctx)
	if err != nil {
		return 0, fmt.Errorf("catch up: %w", err)
	}
	var (
		mu    sync.Mutex
		total int
		errs  []error
	)
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, p := range points {
		if handles != nil && !handles(p.GuildID) {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			n, err := s.catchUpThread(ctx, r, p)
			mu.Lock()
			defer mu.Unlock()
			total += n
			if err != nil {
				errs = append(errs, fmt.Errorf("thread %s: %w", p.ThreadID, err))
			}
		})
	}
	wg.Wait()
	return total, errors.Join(errs...)
}

func (s *Service) catchUpThread(ctx context.Context, r ThreadReader, p CatchUpPoint) (int, error) {
	from := p.Started
	if t := SnowflakeTime(p.Last).Add(-catchUpWindow); t.After(from) {
		from = t
	}
	msgs, err := r.MessagesAfter(ctx, p.ThreadID, strconv.FormatInt(Snowflake(from)-1, 10), catchUpRead)
	if err != nil {
		return 0, err
	}
	recorded, refused := 0, 0
	for _, m := range msgs {
		if m.AuthorBot || m.empty() {
			continue
		}
		t := Turn{SessionID: p.SessionID, MessageID: m.ID, GuildID: p.GuildID, ChannelID: p.ThreadID,
			AuthorID: m.AuthorID, Content: CleanText(m.Content), State: TurnRefused}
		if recorded < CatchUpMax {
			if t, err = s.newTurn(ctx, p.SessionID, p.GuildID, p.ThreadID, m); err != nil {
				return recorded, err
			}
		}
		_, created, err := s.store.RecordTurn(ctx, t)
		if err != nil {
			return recorded, err
		}
		switch {
		case created && t.State == TurnRefused:
			refused++
		case created:
			recorded++
		}
	}
	if refused > 0 {
		notice := fmt.Sprintf("⚠️ I was offline and missed %d messages here. I picked up the first %d; "+
			"the other %d will not be answered, so please send again what still matters.", recorded+refused, recorded, refused)
		if err := s.store.Notice(ctx, p.SessionID, notice); err != nil {
			return recorded, err
		}
	}
	return recorded, nil
}
