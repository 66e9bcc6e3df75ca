package master

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
)

// apiFakes is the world of an API test: func-field fakes of every port
// master.API uses, recording what they were asked.
type apiFakes struct {
	claim    func(key string) (Session, bool, error)
	start    func(s Session) (Session, error)
	byKey    func(key string) (Session, error)
	member   func(userID string) (GuildMember, error)
	channel  Channel
	released []string
	threads  []string
	archived []string
}

type fakeAPIStore struct {
	APIStore // unused methods panic
	f        *apiFakes
}

func (s fakeAPIStore) ClaimAPIKey(_ context.Context, key string, _ time.Duration) (Session, bool, error) {
	return s.f.claim(key)
}

func (s fakeAPIStore) ReleaseAPIKey(_ context.Context, key string) error {
	s.f.released = append(s.f.released, key)
	return nil
}

func (s fakeAPIStore) SessionByAPIKey(_ context.Context, key string) (Session, error) {
	return s.f.byKey(key)
}

type fakeStartStore struct {
	SessionStore // unused methods panic
	f            *apiFakes
}

func (s fakeStartStore) Access(context.Context, string) (Access, error) { return Access{}, nil }

func (s fakeStartStore) CheckCaps(context.Context, string, string, SessionCaps) error { return nil }

func (s fakeStartStore) StartSession(_ context.Context, sess Session, _ []Role, _, _ string, _ SessionCaps) (Session, error) {
	return s.f.start(sess)
}

type fakeAPIChannels struct{ f *apiFakes }

func (c fakeAPIChannels) Resolve(context.Context, string, string) (Channel, error) {
	return c.f.channel, nil
}

func (c fakeAPIChannels) StartThread(context.Context, string, string) (string, error) {
	id := "th" + string(rune('0'+len(c.f.threads)))
	c.f.threads = append(c.f.threads, id)
	return id, nil
}

func (c fakeAPIChannels) CanPost(context.Context, string) error { return nil }

func (c fakeAPIChannels) GuildMember(_ context.Context, _, _, userID string) (GuildMember, error) {
	return c.f.member(userID)
}

func newTestAPI(f *apiFakes) *API {
	svc := NewService(ServiceConfig{}, fakeStartStore{f: f}, nil)
	ch := fakeAPIChannels{f: f}
	return NewAPI(APIConfig{Service: svc, Channels: ch, Guilds: ch,
		Archive: func(_ context.Context, id string) error { f.archived = append(f.archived, id); return nil }},
		fakeAPIStore{f: f}, slog.New(slog.DiscardHandler))
}

func defaultFakes() *apiFakes {
	return &apiFakes{
		claim:   func(string) (Session, bool, error) { return Session{}, true, nil },
		start:   func(s Session) (Session, error) { s.ID = 7; return s, nil },
		byKey:   func(string) (Session, error) { return Session{}, ErrNotFound },
		member:  func(string) (GuildMember, error) { return GuildMember{Permissions: PermAdministrator}, nil },
		channel: Channel{ID: "200", GuildID: "100"},
	}
}

var okDispatch = DispatchRequest{Key: "k1", GuildID: "100", Channel: "#dev", UserID: "300", Goal: "ship it",
	CallbackURL: "https://x.example/cb"}

func TestAPIDispatchStarts(t *testing.T) {
	t.Parallel()
	f := defaultFakes()
	var started Session
	f.start = func(s Session) (Session, error) { started = s; s.ID = 7; return s, nil }
	s, created, err := newTestAPI(f).Dispatch(t.Context(), okDispatch)
	if err != nil || !created || s.ID != 7 {
		t.Fatalf("Dispatch = %+v, %v, %v", s, created, err)
	}
	if started.APIKey != "k1" || started.CallbackURL != "https://x.example/cb" || started.OwnerID != "300" ||
		started.ChannelID != "200" || started.ThreadID != "th0" {
		t.Errorf("started %+v, want the key, callback, owner, channel and new thread", started)
	}
	if len(f.released) != 1 || len(f.archived) != 0 {
		t.Errorf("released %v, archived %v; want the claim released, nothing archived", f.released, f.archived)
	}
}

func TestAPIDispatchRefusals(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		req     func(d DispatchRequest) DispatchRequest
		fakes   func(f *apiFakes)
		code    string
		is      error
		threads int
	}{
		{"no key", func(d DispatchRequest) DispatchRequest { d.Key = " "; return d }, nil, EInvalid, nil, 0},
		{"no user", func(d DispatchRequest) DispatchRequest { d.UserID = ""; return d }, nil, EInvalid, nil, 0},
		{"an ftp callback", func(d DispatchRequest) DispatchRequest { d.CallbackURL = "ftp://x/"; return d }, nil, EInvalid, nil, 0},
		{"no goal", func(d DispatchRequest) DispatchRequest { d.Goal = ""; return d }, nil, EInvalid, nil, 0},
		{"key in progress", nil, func(f *apiFakes) {
			f.claim = func(string) (Session, bool, error) { return Session{}, false, ErrInProgress }
		}, EConflict, ErrInProgress, 0},
		{"a thread as channel", nil, func(f *apiFakes) { f.channel.Thread = true }, EInvalid, nil, 0},
		{"a member who may not post", nil, func(f *apiFakes) {
			f.member = func(string) (GuildMember, error) { return GuildMember{}, nil }
		}, ENotAllowed, ErrNotAllowed, 0},
		{"an unknown role", func(d DispatchRequest) DispatchRequest { d.Roles = []string{"astronaut"}; return d }, nil, EInvalid, nil, 0},
		{"a stranger", nil, func(f *apiFakes) {
			f.member = func(string) (GuildMember, error) { return GuildMember{}, ErrNotFound }
		}, ENotFound, nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := defaultFakes()
			if c.fakes != nil {
				c.fakes(f)
			}
			d := okDispatch
			if c.req != nil {
				d = c.req(d)
			}
			_, _, err := newTestAPI(f).Dispatch(t.Context(), d)
			if ErrorCode(err) != c.code || (c.is != nil && !errors.Is(err, c.is)) || len(f.threads) != c.threads {
				t.Errorf("%s: %v (code %s), %d threads; want code %s, %d threads", c.name, err, ErrorCode(err), len(f.threads), c.code, c.threads)
			}
		})
	}
}

// A key that started its team answers with it, asking Discord nothing.
func TestAPIDispatchKnownKey(t *testing.T) {
	t.Parallel()
	f := defaultFakes()
	f.claim = func(string) (Session, bool, error) { return Session{ID: 5, APIKey: "k1"}, false, nil }
	s, created, err := newTestAPI(f).Dispatch(t.Context(), okDispatch)
	if err != nil || created || s.ID != 5 || len(f.threads) != 0 || len(f.released) != 0 {
		t.Errorf("Dispatch = %+v, %v, %v, threads %v; want session 5 as it was", s, created, err, f.threads)
	}
}

// A request whose claim lapsed while it worked loses to the one that
// claimed the key after it: its thread is archived and the winner's team
// is the answer.
func TestAPIDispatchLosesTheRace(t *testing.T) {
	t.Parallel()
	f := defaultFakes()
	f.start = func(Session) (Session, error) { return Session{}, ErrKeyUsed }
	f.byKey = func(string) (Session, error) { return Session{ID: 9, APIKey: "k1"}, nil }
	s, created, err := newTestAPI(f).Dispatch(t.Context(), okDispatch)
	if err != nil || created || s.ID != 9 {
		t.Fatalf("Dispatch = %+v, %v, %v; want the winner's session 9", s, created, err)
	}
	if len(f.archived) != 1 || f.archived[0] != f.threads[0] {
		t.Errorf("archived %v, want the loser's thread %v", f.archived, f.threads)
	}
}
