package master

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// The inbound API's domain: starting a team for an outside caller
// exactly as /callon would (the same checks, caps and roles, for the
// member named as its owner), adding a message to a team, and showing
// one. The HTTP adapter (package api) checks signatures and sizes and
// turns these errors into JSON.

// SessionView is what the API shows of a team.
type SessionView struct {
	Session    Session
	OpenTurns  int         // messages queued, being answered or waiting for an answer
	DoneTurns  int         // messages answered
	LastReport *ReportView // nil before the first report
}

// ReportView is a report as the API shows it.
type ReportView struct {
	ID       int64
	Summary  string
	Final    bool
	Delivery string // "injected", "posted" or "callback"
	At       time.Time
}

// APIStore is what the inbound API needs from Postgres.
type APIStore interface {
	// ClaimAPIKey returns the team started with key (claimed false), or
	// claims key for lease; ErrInProgress while another request holds it.
	ClaimAPIKey(ctx context.Context, key string, lease time.Duration) (s Session, claimed bool, err error)
	// ReleaseAPIKey lets go of a claim.
	ReleaseAPIKey(ctx context.Context, key string) error
	// SessionByAPIKey returns the team started with key, or ErrNotFound.
	SessionByAPIKey(ctx context.Context, key string) (Session, error)
	// SeenRequest records a request id until expires and reports whether
	// it was seen before.
	SeenRequest(ctx context.Context, id string, expires time.Time) (bool, error)
	// SessionView returns a session with its turns' counts and last
	// report, or ErrNotFound.
	SessionView(ctx context.Context, id int64) (SessionView, error)
	AccessReader
	TurnRecorder
}

// APIConfig wires the API to the rest of callon.
type APIConfig struct {
	Service  *Service // starts teams, with its caps and admission
	Channels Channels // resolves channels and opens threads
	Guilds   Guilds   // members' permissions
	// Archive archives a thread a refused start left empty; nil: left as is.
	Archive func(ctx context.Context, threadID string) error
	// ClaimLease is how long a dispatch may take before another request
	// with its key may try again (2 min).
	ClaimLease time.Duration
}

// API carries out the inbound API's requests.
type API struct {
	cfg   APIConfig
	store APIStore
	log   *slog.Logger
}

// NewAPI returns the API.
func NewAPI(cfg APIConfig, store APIStore, logger *slog.Logger) *API {
	cfg.ClaimLease = cmp.Or(cfg.ClaimLease, 2*time.Minute)
	return &API{cfg: cfg, store: store, log: logger.With("component", "api")}
}

// Bounds of API requests.
const (
	MaxAPIKeyLen      = 200
	MaxCallbackURLLen = 2000
	// MaxAPIMessageLen bounds a message added through the API: what a
	// message may hold (MaxMessageLen), less the line naming its sender.
	MaxAPIMessageLen = 1800
)

// DispatchRequest asks for a team, as POST /v1/dispatch does.
type DispatchRequest struct {
	Key         string // the idempotency key: one team per key
	GuildID     string
	Channel     string // a text channel: an id, <#id> or #name
	UserID      string // the member the team works for: its owner
	Goal        string
	ReportTo    string // optional: a channel or thread to report to
	CallbackURL string // optional: receives the team's reports
	Roles       []string
}

// check validates what needs no I/O.
func (d DispatchRequest) check() error {
	switch {
	case strings.TrimSpace(d.Key) == "" || utf8.RuneCountInString(d.Key) > MaxAPIKeyLen:
		return Errorf(EInvalid, "idempotency_key is required: a string of 1 to %d characters, the same when you retry a request.", MaxAPIKeyLen)
	case !snowflake(d.GuildID):
		return Errorf(EInvalid, "guild_id is required: the id of the server.")
	case strings.TrimSpace(d.Channel) == "":
		return Errorf(EInvalid, "channel is required: a text channel's id, <#id> or #name, where the team's thread is opened.")
	case !snowflake(d.UserID):
		return Errorf(EInvalid, "user_id is required: the id of the member the team works for, who must be allowed to start teams in that channel.")
	}
	return CheckCallbackURL(d.CallbackURL)
}

// snowflake reports whether s looks like an id (ParseSnowflake).
func snowflake(s string) bool {
	_, ok := ParseSnowflake(s)
	return ok
}

// CheckCallbackURL validates a callback URL ("" is none). Where it may
// point is checked when callon connects to it (the fetch_url rules).
func CheckCallbackURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(raw) > MaxCallbackURLLen {
		return Errorf(EInvalid, "callback_url must be an absolute http:// or https:// URL of at most %d characters.", MaxCallbackURLLen)
	}
	return nil
}

// Dispatch starts a team for an API caller: in a new thread of the
// channel, owned by the member named, after the checks /callon makes
// for that member (they may post there and start teams, the caps). A
// key that started a team before returns that team (created false),
// however often and however concurrently it is sent.
func (a *API) Dispatch(ctx context.Context, d DispatchRequest) (sess Session, created bool, err error) {
	if err := d.check(); err != nil {
		return Session{}, false, err
	}
	goal, err := CheckGoal(d.Goal)
	if err != nil {
		return Session{}, false, err
	}
	prev, claimed, err := a.store.ClaimAPIKey(ctx, d.Key, a.cfg.ClaimLease)
	switch {
	case errors.Is(err, ErrInProgress):
		return Session{}, false, &Error{Code: EConflict, Err: err,
			Message: "A request with this idempotency_key is starting its team right now; ask again in a moment to get it."}
	case err != nil:
		return Session{}, false, err
	case !claimed:
		return prev, false, nil
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if rerr := a.store.ReleaseAPIKey(rctx, d.Key); rerr != nil {
			a.log.Warn("release idempotency key", "err", rerr)
		}
	}()
	l, err := a.launcher().Launch(ctx, Launch{
		Entrance: FromAPI, GuildID: d.GuildID, Channel: d.Channel, UserID: d.UserID, Goal: goal, Pick: d.Roles,
		ReportTo: d.ReportTo, APIKey: d.Key, CallbackURL: d.CallbackURL,
	})
	if errors.Is(err, ErrKeyUsed) { // another request won, its claim's lease having run out
		prev, perr := a.store.SessionByAPIKey(ctx, d.Key)
		if perr != nil {
			return Session{}, false, perr
		}
		return prev, false, nil
	}
	if err != nil {
		return Session{}, false, err
	}
	return l.Session, true, nil
}

// launcher starts the API's teams.
func (a *API) launcher() Launcher {
	return Launcher{Service: a.cfg.Service, Channels: a.cfg.Channels, Guilds: a.cfg.Guilds, Archive: a.cfg.Archive, Log: a.log}
}

// APIMessagePrefix starts the message id of a turn added through the
// API ("api:<session>:<key>"): there is no message in the thread to reply to.
const APIMessagePrefix = "api:"

// APIMessage is a message added to a team through the API.
type APIMessage struct {
	// Key makes the message idempotent: the same key in the same team is
	// one turn.
	Key     string
	UserID  string // the member it is sent for
	Content string
}

// Message adds a message to an active team as a turn of its own: its
// text is posted in the thread, naming the member it is sent for, and
// the team answers it there like any message. A key sent before returns
// that turn (created false). The member must be allowed to talk to the
// team; the thread's queue applies.
func (a *API) Message(ctx context.Context, sessionID int64, m APIMessage) (t Turn, created bool, err error) {
	content := strings.TrimSpace(m.Content)
	switch {
	case strings.TrimSpace(m.Key) == "" || utf8.RuneCountInString(m.Key) > MaxAPIKeyLen:
		return Turn{}, false, Errorf(EInvalid, "idempotency_key is required: a string of 1 to %d characters.", MaxAPIKeyLen)
	case !snowflake(m.UserID):
		return Turn{}, false, Errorf(EInvalid, "user_id is required: the id of the member the message is sent for.")
	case content == "":
		return Turn{}, false, Errorf(EInvalid, "content is required: the message's text.")
	case utf8.RuneCountInString(content) > MaxAPIMessageLen:
		return Turn{}, false, Errorf(EInvalid, "content is %d characters long; keep it under %d.", utf8.RuneCountInString(content), MaxAPIMessageLen)
	}
	v, err := a.view(ctx, sessionID)
	if errors.Is(err, ErrNotFound) {
		return Turn{}, false, Errorf(ENotFound, "There is no team %d.", sessionID)
	}
	if err != nil {
		return Turn{}, false, err
	}
	s := v.Session
	if s.State != SessionActive {
		return Turn{}, false, Errorf(EConflict, "Team %d has been dissolved; start a new one with POST /v1/dispatch.", sessionID)
	}
	member, err := a.launcher().member(ctx, Launch{GuildID: s.GuildID, UserID: m.UserID}, Channel{ID: s.ThreadID, Thread: true}, cannotWork)
	if err != nil {
		return Turn{}, false, err
	}
	acc, err := a.store.Access(ctx, s.GuildID)
	if err != nil {
		return Turn{}, false, err
	}
	if !acc.Allows(AccessTalk, m.UserID, member.Roles, s.ChannelID) {
		return Turn{}, false, &Error{Code: ENotAllowed, Err: ErrNotAllowed, Message: notAllowedText(AccessTalk)}
	}
	svc := a.cfg.Service
	in := Incoming{ID: fmt.Sprintf("%s%d:%s", APIMessagePrefix, s.ID, m.Key), GuildID: s.GuildID, ChannelID: s.ThreadID, AuthorID: m.UserID, Content: content}
	t, err = svc.newTurn(ctx, s.ID, s.GuildID, s.ThreadID, in)
	if err != nil {
		return Turn{}, false, err
	}
	t.Echo = Truncate(fmt.Sprintf("📨 **Through the API, for <@%s>:**\n%s", m.UserID, content), MaxMessageLen)
	t, created, err = a.store.RecordTurn(ctx, t, svc.admission())
	if err != nil {
		return Turn{}, false, fmt.Errorf("record turn: %w", err)
	}
	if t.State == TurnRefused {
		return t, created, Errorf(ELimit, "The team is not taking this message: it has too many to answer already, or its sender sent too many this minute. Please send it again later.")
	}
	return t, created, nil
}

// View returns a team as GET /v1/sessions/{id} shows it.
func (a *API) View(ctx context.Context, sessionID int64) (SessionView, error) {
	v, err := a.view(ctx, sessionID)
	if errors.Is(err, ErrNotFound) {
		return v, Errorf(ENotFound, "There is no team %d.", sessionID)
	}
	return v, err
}

// view reads a team of the default surface: the API knows no other (a terminal team is
// its chat's alone), ErrNotFound.
func (a *API) view(ctx context.Context, sessionID int64) (SessionView, error) {
	v, err := a.store.SessionView(ctx, sessionID)
	if err == nil && !(Scope{}).Serves(v.Session) {
		return SessionView{}, ErrNotFound
	}
	return v, err
}

// Seen records a signed request's id until expires and reports whether
// it was seen before: a replay.
func (a *API) Seen(ctx context.Context, id string, expires time.Time) (bool, error) {
	return a.store.SeenRequest(ctx, id, expires)
}
