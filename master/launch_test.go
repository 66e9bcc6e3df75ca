package master

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

// launchWorld is every port starting a team touches, as func-free state:
// channels by reference, members by channel and user, what callon may not
// post in, and what was opened, archived and started.
type launchWorld struct {
	SessionStore      // unused methods panic
	OrchestratorStore // unused methods panic

	channels    map[string]Channel                // by reference (id or #name)
	members     map[string]map[string]GuildMember // by channel, then user; none: not a member
	noPost      map[string]bool                   // where callon may not post
	active      map[string]bool                   // threads with a team
	access      Access
	capped      bool // a cap refuses, when checked and when starting
	lateCap     bool // a cap refuses only when starting: reached since the check
	botTurns    int
	threadFails bool

	threads, archived []string
	started           []Session
}

const (
	lwGuild   = "100"
	lwGeneral = "200" // a text channel
	lwStaff   = "210" // a channel the starter cannot post in
	lwSilent  = "220" // a channel callon cannot post in
	lwThread  = "230" // a thread of general with a team
	lwVoice   = "240"
	lwUser    = "300"
	lwBot     = "310"
)

func newLaunchWorld() *launchWorld {
	w := &launchWorld{
		channels: map[string]Channel{},
		members:  map[string]map[string]GuildMember{},
		noPost:   map[string]bool{lwSilent: true},
		active:   map[string]bool{lwThread: true},
	}
	for _, c := range []Channel{{ID: lwGeneral, Name: "general"}, {ID: lwStaff, Name: "staff"}, {ID: lwSilent, Name: "silent"},
		{ID: lwThread, Thread: true, ParentID: lwGeneral}, {ID: lwVoice, Other: true}} {
		c.GuildID = lwGuild
		w.channels[c.ID], w.channels["<#"+c.ID+">"] = c, c
		if c.Name != "" {
			w.channels["#"+c.Name] = c
		}
		may := GuildMember{Permissions: PermViewChannel | PermSendMessages | PermSendInThreads}
		if c.ID == lwStaff {
			may.Permissions = PermViewChannel
		}
		w.members[c.ID] = map[string]GuildMember{lwUser: may, lwBot: may}
	}
	return w
}

func (w *launchWorld) Access(context.Context, string) (Access, error) { return w.access, nil }

func (w *launchWorld) CheckCaps(context.Context, string, string, SessionCaps) error {
	if w.capped {
		return &CapError{PerUser: true, Limit: 2, Oldest: []Session{{ThreadID: "900", Goal: "an old team", CreatedAt: time.Unix(1e9, 0)}}}
	}
	return nil
}

func (w *launchWorld) BotTurns(context.Context, string, string) (int, error) { return w.botTurns, nil }

func (w *launchWorld) ActiveSession(_ context.Context, threadID string) (Session, error) {
	if w.active[threadID] {
		return Session{ID: 1, ThreadID: threadID}, nil
	}
	return Session{}, ErrNotFound
}

func (w *launchWorld) StartSession(_ context.Context, s Session, _ []Role, _, _ string, _ SessionCaps) (Session, error) {
	if w.capped || w.lateCap {
		return Session{}, &CapError{Limit: 20}
	}
	s.ID = int64(len(w.started) + 10)
	w.started = append(w.started, s)
	return s, nil
}

func (w *launchWorld) Resolve(_ context.Context, _, ref string) (Channel, error) {
	if c, ok := w.channels[ref]; ok {
		return c, nil
	}
	return Channel{}, ErrNotFound
}

func (w *launchWorld) StartThread(_ context.Context, channelID, _ string) (string, error) {
	if w.threadFails {
		return "", errors.New("503")
	}
	id := "th-" + channelID
	w.threads = append(w.threads, id)
	return id, nil
}

func (w *launchWorld) StartThreadFrom(ctx context.Context, channelID, _, name string) (string, error) {
	return w.StartThread(ctx, channelID, name)
}

func (w *launchWorld) CanPost(_ context.Context, channelID string) error {
	if w.noPost[channelID] {
		return errors.New("403")
	}
	return nil
}

func (w *launchWorld) GuildMember(_ context.Context, _, channelID, userID string) (GuildMember, error) {
	if m, ok := w.members[channelID][userID]; ok {
		return m, nil
	}
	return GuildMember{}, ErrNotFound
}

// launchAPIStore claims every key.
type launchAPIStore struct {
	APIStore // unused methods panic
}

func (launchAPIStore) ClaimAPIKey(context.Context, string, time.Duration) (Session, bool, error) {
	return Session{}, true, nil
}

func (launchAPIStore) ReleaseAPIKey(context.Context, string) error { return nil }

func (w *launchWorld) DispatchedByTurn(context.Context, int64, string) (Session, error) {
	return Session{}, ErrNotFound
}

func (w *launchWorld) archive(_ context.Context, threadID string) error {
	w.archived = append(w.archived, threadID)
	return nil
}

// launchAsk is what is asked of every entrance: a goal, where, roles
// picked and where to report.
type launchAsk struct {
	goal, channel, reportTo string
	pick                    []string
}

// entrance starts a team as one entrance does, and returns its refusal
// as text ("" when the team started).
type entrance func(t *testing.T, w *launchWorld, a launchAsk) string

func launchService(w *launchWorld) *Service {
	return NewService(ServiceConfig{BotPerHour: 5}, w, nil)
}

func refusal(err error) string {
	if err == nil {
		return ""
	}
	return ErrorMessage(err)
}

var entrances = []struct {
	name string
	run  entrance
}{
	{"/callon", func(t *testing.T, w *launchWorld, a launchAsk) string {
		l := Launcher{Service: launchService(w), Channels: w, Guilds: w, Archive: w.archive}
		_, err := l.Launch(t.Context(), Launch{Entrance: FromCommand, GuildID: lwGuild, Channel: a.channel, UserID: lwUser, Who: "You",
			Present: true, Goal: a.goal, Pick: a.pick, ReportTo: a.reportTo})
		return refusal(err)
	}},
	{"a trusted bot", func(t *testing.T, w *launchWorld, a launchAsk) string {
		l := Launcher{Service: launchService(w), Channels: w, Guilds: w, Archive: w.archive}
		_, err := l.Launch(t.Context(), Launch{Entrance: FromBot, GuildID: lwGuild, Channel: a.channel, Message: "999", UserID: lwBot,
			Who: "the bot", Present: true, Goal: a.goal, ReportTo: a.reportTo})
		return refusal(err)
	}},
	{"the API", func(t *testing.T, w *launchWorld, a launchAsk) string {
		api := NewAPI(APIConfig{Service: launchService(w), Channels: w, Guilds: w, Archive: w.archive}, launchAPIStore{}, slog.New(slog.DiscardHandler))
		_, _, err := api.Dispatch(t.Context(), DispatchRequest{Key: "k", GuildID: lwGuild, Channel: a.channel, UserID: lwUser,
			Goal: a.goal, ReportTo: a.reportTo, Roles: a.pick})
		return refusal(err)
	}},
	{"dispatch", func(t *testing.T, w *launchWorld, a launchAsk) string {
		o := NewOrchestrator(OrchestratorConfig{Owner: "p", Model: "m", Dispatch: true, DispatchDepth: 1,
			Channels: w, Guilds: w, Service: launchService(w), Archive: w.archive}, w, nil, slog.New(slog.DiscardHandler))
		from := Session{ID: 1, GuildID: lwGuild, ThreadID: "home", OwnerID: lwUser, Goal: "the parent's goal"}
		got := o.dispatch(t.Context(), from, Turn{ID: 5, AuthorID: lwUser}, a.channel, a.goal)
		if msg, ok := strings.CutPrefix(got, "Refused: "); ok {
			return msg
		}
		return ""
	}},
}

// Every entrance that starts a team goes through every refusal of
// Launcher.Launch: each is refused with the same words, starts nothing,
// and leaves no thread open. Refusals that cannot apply to an entrance
// (the starter seen posting in the channel, a dispatched team's report
// channel, roles a bot cannot pick) are marked so.
func TestEveryEntranceRefusesAlike(t *testing.T) {
	t.Parallel()
	ok := launchAsk{goal: "ship it", channel: "#general"}
	cases := []struct {
		name  string
		ask   func(a *launchAsk)
		world func(w *launchWorld)
		want  string
		skip  []string // entrances it cannot apply to
	}{
		{name: "no goal", ask: func(a *launchAsk) { a.goal = " " }, want: "give the team a goal"},
		{name: "a goal too long", ask: func(a *launchAsk) { a.goal = strings.Repeat("x", MaxGoalLen+1) }, want: "keep it under"},
		{name: "no such channel", ask: func(a *launchAsk) { a.channel = "#nowhere" }, want: `no channel "#nowhere"`},
		{name: "a thread", ask: func(a *launchAsk) { a.channel = lwThread }, want: "is a thread", skip: []string{"/callon"}},
		{name: "a thread with a team", ask: func(a *launchAsk) { a.channel = lwThread }, want: "already has an active team",
			skip: []string{"a trusted bot", "the API", "dispatch"}},
		{name: "a voice channel", ask: func(a *launchAsk) { a.channel = lwVoice }, want: "is not a text channel"},
		{name: "a starter who may not post there", ask: func(a *launchAsk) { a.channel = "#staff" }, want: "cannot see and post in <#" + lwStaff + ">",
			skip: []string{"/callon", "a trusted bot"}},
		{name: "a starter who left", world: func(w *launchWorld) { delete(w.members[lwGeneral], lwUser) }, want: "is not a member",
			skip: []string{"/callon", "a trusted bot"}},
		{name: "an unknown report channel", ask: func(a *launchAsk) { a.reportTo = "#gone" }, want: `report_to: there is no channel "#gone"`,
			skip: []string{"dispatch"}},
		{name: "a report channel the starter may not post in", ask: func(a *launchAsk) { a.reportTo = lwStaff },
			want: "can't post in <#" + lwStaff + ">, so the team may not report there", skip: []string{"dispatch"}},
		{name: "a report channel callon may not post in", ask: func(a *launchAsk) { a.reportTo = lwSilent },
			want: "I can't post in <#" + lwSilent + ">", skip: []string{"dispatch"}},
		{name: "the allow list", world: func(w *launchWorld) { w.access = Access{{Action: AccessStart, Kind: AccessUser, ID: "1"}} },
			want: "limit who may start callon teams"},
		{name: "a cap", world: func(w *launchWorld) { w.capped = true }, want: "already run 2 active teams"},
		{name: "a bot's hourly cap", world: func(w *launchWorld) { w.botTurns = 5 }, want: "within the hour",
			skip: []string{"/callon", "the API", "dispatch"}},
		{name: "an unknown role", ask: func(a *launchAsk) { a.pick = []string{"astronaut"} }, want: "no role `astronaut`",
			skip: []string{"a trusted bot", "dispatch"}},
		{name: "a channel callon may not post in", ask: func(a *launchAsk) { a.channel = "#silent" }, want: "I can't post in <#" + lwSilent + ">"},
		{name: "no thread", world: func(w *launchWorld) { w.threadFails = true }, want: "could not open a thread"},
		{name: "a cap reached since the check", world: func(w *launchWorld) { w.lateCap = true }, want: "already has 20 active teams"},
	}
	for _, c := range cases {
		for _, e := range entrances {
			if slices.Contains(c.skip, e.name) {
				continue
			}
			t.Run(c.name+"/"+e.name, func(t *testing.T) {
				t.Parallel()
				w, a := newLaunchWorld(), ok
				if c.world != nil {
					c.world(w)
				}
				if c.ask != nil {
					c.ask(&a)
				}
				got := e.run(t, w, a)
				if !strings.Contains(got, c.want) {
					t.Errorf("refusal %q, want one that says %q", got, c.want)
				}
				if len(w.started) != 0 {
					t.Errorf("started %+v, want nothing", w.started)
				}
				if !slices.Equal(w.threads, w.archived) {
					t.Errorf("opened threads %v, archived %v: a refusal leaves no thread", w.threads, w.archived)
				}
			})
		}
	}
}

// Every entrance starts the same team where nothing refuses it: in a
// thread of the channel, owned by its starter, with the roles picked
// and the report channel checked.
func TestEveryEntranceStarts(t *testing.T) {
	t.Parallel()
	for _, e := range entrances {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			w := newLaunchWorld()
			a := launchAsk{goal: "  ship   it  ", channel: "#general"}
			if e.name != "dispatch" {
				a.reportTo = "<#" + lwGeneral + ">"
			}
			if got := e.run(t, w, a); got != "" || len(w.started) != 1 {
				t.Fatalf("refused %q, started %v; want one team", got, w.started)
			}
			s := w.started[0]
			if s.ChannelID != lwGeneral || s.ThreadID != "th-"+lwGeneral || s.Goal != "ship   it" || len(w.archived) != 0 {
				t.Errorf("started %+v, archived %v; want a team in a new thread of general", s, w.archived)
			}
			wantReport, wantOwner := lwGeneral, lwUser
			switch e.name {
			case "dispatch":
				wantReport = "home"
			case "a trusted bot":
				wantOwner = lwBot
			}
			if s.ReportTo != wantReport || s.OwnerID != wantOwner {
				t.Errorf("reports to %q, owned by %q; want %q, %q", s.ReportTo, s.OwnerID, wantReport, wantOwner)
			}
		})
	}
}
