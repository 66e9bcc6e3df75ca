package master

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
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
	// ErrSessionActive when the thread has a session already, and a
	// *CapError when caps refuse it (counted atomically).
	StartSession(ctx context.Context, s Session, roster []Role, kickoff, brief string, caps SessionCaps) (Session, error)
	// CheckCaps returns a *CapError when caps would refuse a new session
	// of owner in the guild now.
	CheckCaps(ctx context.Context, guildID, ownerID string, caps SessionCaps) error
	AccessReader
	// BotTurns counts the turns a bot started in a guild within the hour,
	// the teams it started included.
	BotTurns(ctx context.Context, guildID, botID string) (int, error)
	SessionFinder
	// ActiveSessionAccess returns the active session of a thread and its
	// guild's allow lists (in one round trip), or ErrNotFound.
	ActiveSessionAccess(ctx context.Context, threadID string) (Session, Access, error)
	// CatchUpPoints lists every awake active session of a thread with where
	// its thread's catch-up starts.
	CatchUpPoints(ctx context.Context) ([]CatchUpPoint, error)
	// DormantPoints lists the dormant sessions of threads, each with the
	// latest message of its thread callon knows of as Last.
	DormantPoints(ctx context.Context) ([]CatchUpPoint, error)
	// WakeSession wakes a dormant session if caps let its owner and guild
	// have one more awake team (a *CapError otherwise); it reports
	// whether the session was asleep.
	WakeSession(ctx context.Context, sessionID int64, caps SessionCaps) (bool, error)
	// SleepSession puts a thread's awake session to sleep if it has no
	// turn queued or running; it reports whether it did.
	SleepSession(ctx context.Context, threadID string) (bool, error)
	// Notice queues a message in an active session's thread.
	Notice(ctx context.Context, sessionID int64, text string) error
	TurnRecorder
	RosterReader
}

// ServiceConfig bounds what people may start. Zero values mean no bound.
type ServiceConfig struct {
	Caps SessionCaps // active teams per guild and per person
	// MaxQueued bounds a thread's messages waiting or being answered;
	// beyond it they are refused.
	MaxQueued int
	// UserPerMinute bounds the messages one person may send teams of a
	// guild per minute; beyond it they are refused.
	UserPerMinute int
	// TrustedBots are the bots every guild listens to
	// (CALLON_TRUSTED_BOTS); GuildTrustedBots those of one guild (the
	// roles file's), by guild id. A guild's admins add more with
	// /access trust. Every other bot is ignored.
	TrustedBots      []string
	GuildTrustedBots map[string][]string
	// BotPerHour bounds the turns one bot starts in a guild per hour,
	// in threads and by starting teams (CALLON_REPORT_CAP).
	BotPerHour int
	// Features resolves what a channel's new teams get (personas,
	// memory, review); nil means DefaultFeatures.
	Features func(ctx context.Context, guildID, channelID string) (Features, error)
}

// Service is the entry point the bot calls with what people do in threads.
type Service struct {
	cfg    ServiceConfig
	store  SessionStore
	roster func(ctx context.Context, guildID, channelID string) ([]Role, error)
	attach AttachmentPolicy
}

// NewService returns the service. roster resolves the roles available in a
// channel; nil means the built-in defaults.
func NewService(cfg ServiceConfig, store SessionStore, roster func(ctx context.Context, guildID, channelID string) ([]Role, error)) *Service {
	if roster == nil {
		roster = func(context.Context, string, string) ([]Role, error) { return DefaultRoles(), nil }
	}
	return &Service{cfg: cfg, store: store, roster: roster}
}

// caps are the caps on starting a team, the bot's hourly cap included.
func (s *Service) caps() SessionCaps {
	c := s.cfg.Caps
	c.BotPerHour = s.cfg.BotPerHour
	return c
}

// Starter is who starts a team, and where: the channel the team lives in
// (a thread's parent), for the allow lists.
type Starter struct {
	GuildID   string
	ChannelID string
	UserID    string
	Roles     []string // the member's role ids
	// OwnerID is whose team it is, for the caps: the dispatching team's
	// owner for a dispatched team; "" means UserID.
	OwnerID string
	// Bot says UserID is a trusted bot's: its hourly cap applies.
	Bot bool
}

// CheckStart says, as an *Error a person may read, why a team may not be
// started now: the guild's allow lists, or a cap on active teams. Call it
// before work a refusal would waste; StartSession enforces the caps again,
// atomically.
func (s *Service) CheckStart(ctx context.Context, st Starter) error {
	acc, err := s.store.Access(ctx, st.GuildID)
	if err != nil {
		return fmt.Errorf("check start: %w", err)
	}
	if !acc.Allows(AccessStart, st.UserID, st.Roles, st.ChannelID) {
		return &Error{Code: ENotAllowed, Err: ErrNotAllowed, Message: notAllowedText(AccessStart)}
	}
	if st.Bot && s.cfg.BotPerHour > 0 {
		n, err := s.store.BotTurns(ctx, st.GuildID, st.UserID)
		if err != nil {
			return fmt.Errorf("check start: %w", err)
		}
		if n >= s.cfg.BotPerHour {
			return s.botCapped(fmt.Errorf("%d turns within the hour: %w", n, ErrBotCapped))
		}
	}
	return CapRefusal(s.store.CheckCaps(ctx, st.GuildID, cmp.Or(st.OwnerID, st.UserID), s.cfg.Caps))
}

// botCapped is what a bot's refused start reads (only logged: a bot is
// never answered when it is refused).
func (s *Service) botCapped(err error) error {
	return &Error{Code: ELimit, Err: err,
		Message: fmt.Sprintf("That bot has sent callon teams %d messages within the hour, the most one bot may.", s.cfg.BotPerHour)}
}

// Trusts reports whether callon listens to botID in a guild: the
// deployment's trusted bots, the guild's in the roles file, and those its
// admins named with /access trust.
func (s *Service) Trusts(ctx context.Context, guildID, botID string) (bool, error) {
	if s.trustedByConfig(guildID, botID) {
		return true, nil
	}
	acc, err := s.store.Access(ctx, guildID)
	if err != nil {
		return false, fmt.Errorf("trusted bots: %w", err)
	}
	return acc.Trusts(botID), nil
}

// trustedByConfig reports whether the deployment or the roles file trust
// botID in a guild.
func (s *Service) trustedByConfig(guildID, botID string) bool {
	return botID != "" && (slices.Contains(s.cfg.TrustedBots, botID) || slices.Contains(s.cfg.GuildTrustedBots[guildID], botID))
}

// ConfigTrustedBots lists the bots the deployment and the roles file
// trust in a guild, for /access show.
func (s *Service) ConfigTrustedBots(guildID string) []string {
	return append(slices.Clone(s.cfg.TrustedBots), s.cfg.GuildTrustedBots[guildID]...)
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
	// RequestedByBot and RequestMessageID are set for a team a trusted
	// bot started by mentioning callon: its brief's author is that bot,
	// and the bot's turns per hour are capped.
	RequestedByBot   string
	RequestMessageID string
	// APIKey and CallbackURL are set for a team started through the API:
	// its idempotency key (ErrKeyUsed when a team has it already) and
	// where its reports go, besides ReportTo.
	APIKey      string
	CallbackURL string
	// Surface is where people talk to the team ("": the default surface);
	// AttachedTo, for a terminal team, the owner of the chat process
	// that serves it.
	Surface    Surface
	AttachedTo string
	// Review, when set, overrides the channel's review mode for this
	// team (/callon's review option).
	Review ReviewMode
}

// StartSession creates the team and queues its kickoff message.
// ErrSessionActive when the thread already has a team; an *Error wrapping
// a *CapError when a cap on active teams refuses it.
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
	features, err := s.teamFeatures(ctx, n)
	if err != nil {
		return Session{}, nil, err
	}
	sess, err := s.store.StartSession(ctx, Session{
		GuildID: n.GuildID, ChannelID: n.ChannelID, ThreadID: n.ThreadID,
		OwnerID: n.OwnerID, Goal: goal, State: SessionActive, ReportTo: n.ReportTo,
		DispatchedBy: n.DispatchedBy, DispatchedTurn: n.DispatchedTurn, DispatchDepth: n.DispatchDepth,
		RequestedByBot: n.RequestedByBot, RequestMessageID: n.RequestMessageID,
		APIKey: n.APIKey, CallbackURL: n.CallbackURL, Surface: n.Surface, AttachedTo: n.AttachedTo,
		Features: features,
	}, roster, Kickoff(goal, n.OwnerID, roster, n.ReportTo, n.DispatchedBy != 0, n.CallbackURL != ""), n.Brief, s.caps())
	if errors.Is(err, ErrCapped) {
		return Session{}, nil, CapRefusal(err)
	}
	if errors.Is(err, ErrBotCapped) {
		return Session{}, nil, s.botCapped(err)
	}
	if errors.Is(err, ErrSessionActive) {
		return Session{}, nil, &Error{Code: EConflict, Err: err,
			Message: "This thread already has an active team: talk to it here, or end it with `/dissolve` first."}
	}
	if err != nil {
		return Session{}, nil, err
	}
	return sess, roster, nil
}

// Kickoff is the first message in a team's thread. callback says the
// team was started through the API with a callback URL (never shown: it
// may carry a token).
func Kickoff(goal, ownerID string, roster []Role, reportTo string, dispatched, callback bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "🚀 **Team assembled** by <@%s>\n**Goal:** %s\n\n**Team**\n", ownerID, Truncate(goal, 600))
	for _, r := range roster {
		fmt.Fprintf(&b, "• **%s** — %s\n", r.Name, Truncate(r.Description, 150))
	}
	switch {
	case dispatched:
		fmt.Fprintf(&b, "\n📨 Dispatched by the team in <#%s>: it reports back there.\n", reportTo)
	case reportTo != "" && callback:
		fmt.Fprintf(&b, "\n📨 Reports to <#%s> and to the API caller that started it.\n", reportTo)
	case reportTo != "":
		fmt.Fprintf(&b, "\n📨 Reports to <#%s>.\n", reportTo)
	case callback:
		b.WriteString("\n📨 Started through the API: it reports back to the caller.\n")
	}
	b.WriteString("\nTalk to the team right here: every message goes to the coordinator, who answers or hands work to the team. `/team` shows who is doing what, `/dissolve` ends the session.")
	return Truncate(b.String(), MaxMessageLen)
}

// Incoming is a message posted in a channel or thread.
type Incoming struct {
	ID        string
	GuildID   string
	ChannelID string
	AuthorID  string
	AuthorBot bool
	// FromSelf says callon itself wrote the message: it is never a turn,
	// whatever the trusted bots.
	FromSelf bool
	// AuthorRoles are the author's role ids in the guild, for the allow
	// lists.
	AuthorRoles []string
	Content     string
	Attachments []IncomingAttachment
}

// empty reports whether the message has neither text nor files.
func (m Incoming) empty() bool { return strings.TrimSpace(m.Content) == "" && len(m.Attachments) == 0 }

// HandleMessage routes a message to its session's master. Messages from
// callon itself, from bots it does not trust, outside session threads,
// without text or files, or redelivered are ignored. A trusted bot's
// message is a turn like a person's, marked as a bot's and counted
// against the bot's hourly cap. A message the guild's allow lists
// refuse, or beyond the thread's queue or its author's rate, is recorded
// as a refused turn, never answered; the thread is told once per burst.
// It returns the message's turn (new, or recorded before), or a zero Turn
// when the message is not for a team.
func (s *Service) HandleMessage(ctx context.Context, m Incoming) (Turn, error) {
	if m.FromSelf || m.empty() {
		return Turn{}, nil
	}
	sess, acc, err := s.store.ActiveSessionAccess(ctx, m.ChannelID)
	if errors.Is(err, ErrNotFound) {
		return Turn{}, nil
	}
	if err != nil {
		return Turn{}, fmt.Errorf("find session: %w", err)
	}
	if m.AuthorBot && !s.trustedByConfig(m.GuildID, m.AuthorID) && !acc.Trusts(m.AuthorID) {
		return Turn{}, nil
	}
	t, err := s.newTurn(ctx, sess.ID, m.GuildID, m.ChannelID, m)
	if err != nil {
		return Turn{}, err
	}
	admission := s.admission()
	switch {
	case !acc.Allows(AccessTalk, m.AuthorID, m.AuthorRoles, sess.ChannelID):
		t.State = TurnRefused
	case !sess.DormantSince.IsZero():
		// A dormant team wakes for the message, if the caps let it.
		refusal, err := s.wake(ctx, sess)
		if err != nil {
			return Turn{}, err
		}
		if refusal != "" {
			t.State, admission.Refused = TurnRefused, refusal
		}
	}
	t, _, err = s.store.RecordTurn(ctx, t, admission)
	if err != nil {
		return Turn{}, fmt.Errorf("record turn: %w", err)
	}
	return t, nil
}

// newTurn is the queued turn of a message: with its files, planned by
// the attachment policy, and the role it is addressed to, if any.
func (s *Service) newTurn(ctx context.Context, sessionID int64, guildID, channelID string, m Incoming) (Turn, error) {
	t := Turn{SessionID: sessionID, MessageID: m.ID, GuildID: guildID, ChannelID: channelID, AuthorID: m.AuthorID, AuthorBot: m.AuthorBot,
		Content: m.Content, State: TurnQueued, Attachments: s.attach.Plan(m.Attachments)}
	if addressCandidate(m.Content) != "" {
		roster, err := s.store.Roster(ctx, sessionID)
		if err != nil {
			return t, fmt.Errorf("roster: %w", err)
		}
		t.AddressedTo = Addressee(m.Content, roster)
	}
	return t, nil
}

// admission is how a message in a thread is admitted, with what the
// thread is told, once per burst, when one is not.
func (s *Service) admission() Admission {
	a := Admission{MaxOpen: s.cfg.MaxQueued, PerMinute: s.cfg.UserPerMinute, BotPerHour: s.cfg.BotPerHour, Refused: notAllowedText(AccessTalk)}
	if a.BotPerHour > 0 {
		a.BotCapped = fmt.Sprintf("⏳ A bot may send callon teams at most %d messages an hour; "+
			"its messages over that will not be answered.", a.BotPerHour)
	}
	if a.MaxOpen > 0 {
		a.QueueFull = fmt.Sprintf("⏳ This team already has %d messages to answer, so it is not taking new ones for now: "+
			"messages sent until it catches up will not be answered. Please send again what still matters once it has replied.", a.MaxOpen)
	}
	if a.PerMinute > 0 {
		a.RateLimited = fmt.Sprintf("⏳ One person may send callon teams at most %d messages a minute; "+
			"the ones over that will not be answered. Please send again what still matters in a minute.", a.PerMinute)
	}
	return a
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

// catchUpSkew is how much later than the gateway's READY a message's own
// timestamp (the platform's clock) may be and still have been posted before
// it (this host's clock): such messages are recorded as if they had just
// arrived, like the gateway's own, since either path may see them first.
// Later ones are the gateway's alone.
const catchUpSkew = 5 * time.Second

// CatchUpPoint is where a session's catch-up starts reading its thread.
type CatchUpPoint struct {
	SessionID int64
	GuildID   string
	ChannelID string // the thread's parent, for the allow lists
	ThreadID  string
	Started   time.Time // when the session started
	// Last is the id of the thread's latest message recorded as a turn;
	// "" when none is.
	Last string
	// Refusal, when set, is why the messages found are not taken: the
	// dormant team could not wake (a cap); each is recorded refused.
	Refusal string
}

// ThreadReader reads threads' history, and who wrote it.
type ThreadReader interface {
	// MessagesAfter returns up to limit messages of a channel posted after
	// the message id after, oldest first.
	MessagesAfter(ctx context.Context, channelID, after string, limit int) ([]Incoming, error)
	// MemberRoles returns a member's role ids in a guild (messages read
	// from history do not carry them); ErrNotFound when the user is not
	// a member.
	MemberRoles(ctx context.Context, guildID, userID string) ([]string, error)
	// ActiveThreads returns the latest message id of each thread of a
	// guild that is not archived, by thread id: one request, so the
	// catch-up reads a dormant team's thread only when it has news.
	ActiveThreads(ctx context.Context, guildID string) (map[string]string, error)
}

// CatchUp records the messages posted in active sessions' threads while
// nothing was listening (a restart, a gateway session that could not be
// resumed): each thread is read from shortly before its last recorded
// message on, and the messages found are routed as if they had just
// arrived, in the thread's order (recording is idempotent, so a message
// seen before changes nothing). At most CatchUpMax turns are started per
// thread. ready is when the gateway session began: what was posted after
// it arrives live, so it is not counted as missed (see catchUpSkew).
// handles says whether this process serves a guild. It returns how many
// turns it recorded; a thread that cannot be read is skipped with its
// error joined to the result.
func (s *Service) CatchUp(ctx context.Context, r ThreadReader, ready time.Time, handles func(guildID string) bool) (int, error) {
	points, err := s.store.CatchUpPoints(ctx)
	if err != nil {
		return 0, fmt.Errorf("catch up: %w", err)
	}
	woken, derr := s.dormantNews(ctx, r, handles)
	points = append(points, woken...)
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
			n, err := s.catchUpThread(ctx, r, ready, p)
			mu.Lock()
			defer mu.Unlock()
			total += n
			if err != nil {
				errs = append(errs, fmt.Errorf("thread %s: %w", p.ThreadID, err))
			}
		})
	}
	wg.Wait()
	return total, errors.Join(append(errs, derr)...)
}

// mayTalk applies the guild's allow list for talking to a message found
// by the catch-up: its author's roles are looked up only when the list
// names roles, and an author whose roles cannot be known is refused.
func (s *Service) mayTalk(ctx context.Context, r ThreadReader, acc Access, p CatchUpPoint, m Incoming) bool {
	if acc.Allows(AccessTalk, m.AuthorID, m.AuthorRoles, p.ChannelID) {
		return true
	}
	if m.AuthorRoles != nil || !slices.ContainsFunc(acc.Rules(AccessTalk), func(a AccessRule) bool { return a.Kind == AccessRole }) {
		return false
	}
	roles, err := r.MemberRoles(ctx, p.GuildID, m.AuthorID)
	return err == nil && acc.Allows(AccessTalk, m.AuthorID, roles, p.ChannelID)
}

func (s *Service) catchUpThread(ctx context.Context, r ThreadReader, ready time.Time, p CatchUpPoint) (int, error) {
	from := p.Started
	if t := SnowflakeTime(p.Last).Add(-catchUpWindow); t.After(from) {
		from = t
	}
	msgs, err := r.MessagesAfter(ctx, p.ThreadID, strconv.FormatInt(Snowflake(from)-1, 10), catchUpRead)
	if err != nil {
		return 0, err
	}
	acc, err := s.store.Access(ctx, p.GuildID)
	if err != nil {
		return 0, err
	}
	recorded, refused := 0, 0
	for _, m := range msgs {
		if m.FromSelf || m.empty() || (m.AuthorBot && !s.trustedByConfig(p.GuildID, m.AuthorID) && !acc.Trusts(m.AuthorID)) {
			continue
		}
		posted := SnowflakeTime(m.ID)
		if posted.After(ready.Add(catchUpSkew)) {
			break // the gateway delivers it
		}
		live := posted.After(ready)
		t := Turn{SessionID: p.SessionID, MessageID: m.ID, GuildID: p.GuildID, ChannelID: p.ThreadID,
			AuthorID: m.AuthorID, AuthorBot: m.AuthorBot, Content: m.Content, State: TurnRefused}
		if p.Refusal != "" {
			// The dormant team cannot wake: the thread is told why, once.
			if _, _, err := s.store.RecordTurn(ctx, t, Admission{Refused: p.Refusal}); err != nil {
				return recorded, err
			}
			continue
		}
		if (live || recorded < CatchUpMax) && s.mayTalk(ctx, r, acc, p, m) {
			if t, err = s.newTurn(ctx, p.SessionID, p.GuildID, p.ThreadID, m); err != nil {
				return recorded, err
			}
		}
		if live {
			// Posted while the gateway listens: recorded as it would be
			// on arrival, whichever path sees it first.
			if _, _, err := s.store.RecordTurn(ctx, t, s.admission()); err != nil {
				return recorded, err
			}
			continue
		}
		// The thread's queue bounds a catch-up too; its own notice below
		// says what was left out.
		turn, created, err := s.store.RecordTurn(ctx, t, Admission{MaxOpen: s.cfg.MaxQueued, BotPerHour: s.cfg.BotPerHour})
		if err != nil {
			return recorded, err
		}
		switch {
		case created && turn.State == TurnRefused:
			refused++
		case created:
			recorded++
		}
	}
	if refused > 0 {
		notice := fmt.Sprintf("⚠️ I was offline and missed %s here. I picked up %d; "+
			"the other %d will not be answered, so please send again what still matters.",
			fmt.Sprint(recorded+refused)+plural(recorded+refused, " message", " messages"), recorded, refused)
		if err := s.store.Notice(ctx, p.SessionID, notice); err != nil {
			return recorded, err
		}
	}
	return recorded, nil
}
