package discordfake

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"
)

// discordEpoch is the first millisecond of 2015, the zero of snowflake ids.
const discordEpoch = 1420070400000

// Server is a fake Discord: the REST API under /api/v9 and the websocket
// gateway, served on 127.0.0.1. Its methods are safe for concurrent use.
type Server struct {
	cfg      config
	srv      *http.Server
	url      string // http://127.0.0.1:port
	upgrader websocket.Upgrader
	lastID   atomic.Int64

	// wg counts the HTTP server's goroutine and the gateway's, which the
	// server does not wait for once a connection is hijacked.
	wg sync.WaitGroup

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every state change
	closed   bool
	bot      user
	guilds   []*guild
	channels map[string]*channel
	users    map[string]user
	human    string // id of the default human user

	messages  map[string]*message   // by id, ephemeral ones included
	byChan    map[string][]*message // channel id to messages in creation order
	nonces    map[string]*message   // channel id + nonce to the message it created
	denied    map[string]bool       // channels the bot may not post in
	typing    map[string]int
	files     map[string]*fileRecord // attachment id to the file the CDN serves
	downloads map[string]int         // attachment id to downloads from the CDN
	cdnKey    []byte                 // signs attachment URLs

	commands     map[string][]*command // guild id ("" for global) to commands
	interactions map[string]*interaction
	ixByToken    map[string]*interaction

	calls   map[Route]int
	unknown []string
	faults  map[Route][]fault

	sessions   map[string]*gwSession
	conns      map[*gwConn]struct{}
	stats      GatewayStats
	identifies []Identify
	revoked    bool // RevokeToken was called
	outage     bool // StopGateway was called, StartGateway not since
	intents    discordgo.Intent

	onAck       func(*Interaction) // see OnAck
	webhookList []*webhook         // channel webhooks, in the order they were made
	noWebhooks  map[string]bool    // channels where the bot may not manage webhooks
	holds       []*hold            // webhook executions to hold (HoldWebhook)

	oauthSecret string                // the application's client secret
	oauthUser   string                // who authorizes next; "" is the default user
	oauthCodes  map[string]oauthGrant // codes not yet exchanged
	oauthTokens map[string]oauthGrant // access tokens
}

// Start starts a fake Discord on a loopback port; Close stops it.
func Start(opts ...Option) (*Server, error) {
	cfg := defaultConfig()
	for _, opt := range opts {
		opt(&cfg)
	}
	if len(cfg.guilds) == 0 {
		cfg.guilds = []guildSpec{{name: "G", channels: []string{"general", "random"}}}
	}
	s := &Server{
		cfg:          cfg,
		upgrader:     websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }},
		changed:      make(chan struct{}),
		channels:     map[string]*channel{},
		users:        map[string]user{},
		messages:     map[string]*message{},
		byChan:       map[string][]*message{},
		nonces:       map[string]*message{},
		denied:       map[string]bool{},
		noWebhooks:   map[string]bool{},
		typing:       map[string]int{},
		files:        map[string]*fileRecord{},
		downloads:    map[string]int{},
		cdnKey:       []byte(randomHex(16)),
		commands:     map[string][]*command{},
		interactions: map[string]*interaction{},
		ixByToken:    map[string]*interaction{},
		calls:        map[Route]int{},
		faults:       map[Route][]fault{},
		sessions:     map[string]*gwSession{},
		conns:        map[*gwConn]struct{}{},
	}
	s.bot = user{id: cmp.Or(cfg.botUserID, s.newID()), name: cfg.botName, bot: true}
	s.cfg.appID = cmp.Or(cfg.appID, s.newID())
	s.users[s.bot.id] = s.bot
	s.human = s.addUser("alice", false)
	for i, spec := range cfg.guilds {
		g := &guild{id: guildID(i, time.Now()), name: spec.name, created: time.Now(), botRole: s.newID()}
		for i, name := range spec.channels {
			c := &channel{id: s.newID(), guildID: g.id, name: name, typ: discordgo.ChannelTypeGuildText, position: i}
			s.channels[c.id] = c
			g.channels = append(g.channels, c.id)
		}
		s.guilds = append(s.guilds, g)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("discordfake: listen: %w", err)
	}
	s.srv = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	s.url = "http://" + ln.Addr().String()
	s.wg.Go(func() { _ = s.srv.Serve(ln) }) // ends with Close
	return s, nil
}

// Close disconnects every gateway connection and stops the HTTP server.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	conns := make([]*gwConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	for _, ix := range s.interactions {
		ix.timer.Stop()
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close() // requests that would not end: cut them
	}
	s.wg.Wait()
}

// notifyLocked wakes every WaitFor. The caller holds s.mu.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// changes returns a channel that is closed on the next state change.
func (s *Server) changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// WaitFor waits until cond returns true, and returns an error naming what
// when it does not within the wait timeout (10 s unless WithWaitTimeout
// says otherwise). cond is checked after every change to the server's
// state and at least every 20 ms, so it may also watch state outside the
// server, such as a counter kept by a handler. cond must not block.
func (s *Server) WaitFor(cond func() bool, what string) error {
	deadline := time.NewTimer(s.cfg.waitTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		changed := s.changes()
		if cond() {
			return nil
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-deadline.C:
			return fmt.Errorf("timed out after %v waiting for %s", s.cfg.waitTimeout, what)
		}
	}
}

// newID returns a fresh snowflake: the current time in its top bits and
// strictly greater than every id this server issued before.
func (s *Server) newID() string {
	for {
		last := s.lastID.Load()
		id := (time.Now().UnixMilli() - discordEpoch) << 22
		if id <= last {
			id = last + 1
		}
		if s.lastID.CompareAndSwap(last, id) {
			return strconv.FormatInt(id, 10)
		}
	}
}

// addUser registers a user and returns its id. The caller must not hold s.mu.
func (s *Server) addUser(name string, bot bool) string {
	u := user{id: s.newID(), name: name, bot: bot}
	s.mu.Lock()
	s.users[u.id] = u
	s.mu.Unlock()
	return u.id
}

// userLocked returns the user with the given id, inventing a name for ids
// the server has not seen.
func (s *Server) userLocked(id string) user {
	if u, ok := s.users[id]; ok {
		return u
	}
	return user{id: id, name: "user-" + id}
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails, per crypto/rand
	return hex.EncodeToString(b)
}
