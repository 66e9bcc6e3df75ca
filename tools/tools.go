// Package tools runs the tools that workers give their models: the tools
// of MCP servers (over stdio or Streamable HTTP: started on first use,
// shared by every caller in the process, restarted when they die) and the
// built-in fetch_url. It turns a role's tools list into the functions a
// model is offered, and every call into text the model can read.
package tools

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/callonbot/callon/tools/fetch"
)

// FetchURL is the built-in tool that fetches a web page as text.
const FetchURL = "fetch_url"

// Separator joins a server's name and its tool's in the function name a
// model sees: tool T of server S is "S__T".
const Separator = "__"

// Defaults for Options.
const (
	DefaultCallTimeout     = 60 * time.Second
	DefaultMaxOutput       = 16 << 10
	DefaultMaxResponse     = 4 << 20
	DefaultStartTimeout    = 30 * time.Second
	DefaultRestartDelay    = time.Second
	DefaultMaxRestartDelay = time.Minute
)

// defaultPath is the PATH of a stdio server when Options.BaseEnv is nil.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Server is an MCP server the Manager may start. Exactly one of Command
// and URL is set.
type Server struct {
	Name    string            // [a-z0-9-]{1,32}
	Command []string          // stdio: the program and its arguments
	Env     map[string]string // stdio: added to Options.BaseEnv
	URL     string            // Streamable HTTP endpoint
	Headers map[string]string // Streamable HTTP: sent with every request
	// ApproveAll says every call of the server's tools needs a person's
	// approval; ApproveTools names the tools whose calls do.
	ApproveAll   bool
	ApproveTools []string
	// Guilds are the guilds whose roles may use the server; nil: every
	// guild (an empty list: none).
	Guilds []string
	// Approvers are the Discord role ids whose members alone decide on
	// its calls (see Approvers).
	Approvers []string
	// PrivateAll and PrivateTools mark its tools that read private data;
	// OutboundAll and OutboundTools those that send data out (see
	// Approval).
	PrivateAll    bool
	PrivateTools  []string
	OutboundAll   bool
	OutboundTools []string
}

// Options configure a Manager. Zero values take the defaults.
type Options struct {
	// CallTimeout bounds one call, including starting its server.
	CallTimeout time.Duration
	// MaxOutput is how many bytes of a call's output the model sees; the
	// rest is cut, and a marker says how much.
	MaxOutput int
	// MaxResponse bounds the bytes read of one HTTP response of a
	// Streamable HTTP server (a longer one fails its call).
	MaxResponse int64
	// StartTimeout bounds starting a server and listing its tools.
	StartTimeout time.Duration
	// RestartDelay is the wait before starting a server again after its
	// second failure in a row (a failed start, or a session that ended
	// within a minute of starting); it doubles with each further one, up
	// to MaxRestartDelay. The first failure is retried at once.
	RestartDelay    time.Duration
	MaxRestartDelay time.Duration
	// BaseEnv is the environment of every stdio server, as KEY=VALUE,
	// before the server's own Env; nil means a PATH only.
	BaseEnv []string
	// HTTPTransport carries the requests to Streamable HTTP servers;
	// nil means a transport of the Manager's own, without proxy.
	HTTPTransport http.RoundTripper
	// Fetch configures fetch_url; Fetch.Allow is CALLON_FETCH_ALLOW, what
	// every guild may fetch although it is not public.
	Fetch fetch.Options
	// GuildFetchAllow adds, by guild id, what that guild alone may fetch
	// although it is not public (the roles file's guilds.<id>.fetch_allow).
	GuildFetchAllow map[string][]string
	// OutboundAllow lists the hosts fetch_url may reach without a person's
	// approval even for a role that reads private data (see Approval).
	OutboundAllow []string
}

// Manager gives roles their tools and runs their calls. It is safe for
// concurrent use; Close stops the servers it started.
type Manager struct {
	log           *slog.Logger
	opts          Options
	servers       map[string]*server
	order         []string // the servers' names, as configured
	fetcher       *fetch.Fetcher
	guildFetchers map[string]*fetch.Fetcher // guilds with private hosts of their own
	outboundAllow fetch.HostList
	httpTransport http.RoundTripper

	ctx    context.Context // cancelled by Close: aborts starts under way
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	wg       sync.WaitGroup        // every goroutine the Manager starts
	sessions map[*session]struct{} // open sessions, for Close to kill
}

var serverName = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)

// New returns a Manager for servers. No server is started until one of
// its tools is asked for. The error names a bad server or fetch option.
func New(servers []Server, logger *slog.Logger, opts Options) (*Manager, error) {
	opts.CallTimeout = cmp.Or(opts.CallTimeout, DefaultCallTimeout)
	opts.MaxOutput = cmp.Or(opts.MaxOutput, DefaultMaxOutput)
	opts.MaxResponse = cmp.Or(opts.MaxResponse, DefaultMaxResponse)
	opts.StartTimeout = cmp.Or(opts.StartTimeout, DefaultStartTimeout)
	opts.RestartDelay = cmp.Or(opts.RestartDelay, DefaultRestartDelay)
	opts.MaxRestartDelay = max(cmp.Or(opts.MaxRestartDelay, DefaultMaxRestartDelay), opts.RestartDelay)
	if opts.BaseEnv == nil {
		opts.BaseEnv = []string{defaultPath}
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	f, err := fetch.New(opts.Fetch)
	if err != nil {
		return nil, fmt.Errorf("fetch_url: %w", err)
	}
	guildFetchers := make(map[string]*fetch.Fetcher, len(opts.GuildFetchAllow))
	for guild, hosts := range opts.GuildFetchAllow {
		o := opts.Fetch
		o.Allow = append(slices.Clone(o.Allow), hosts...)
		if guildFetchers[guild], err = fetch.New(o); err != nil {
			return nil, fmt.Errorf("fetch_url of guild %s: %w", guild, err)
		}
	}
	outboundAllow, err := fetch.NewHostList(opts.OutboundAllow)
	if err != nil {
		return nil, fmt.Errorf("outbound_allow: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		log:           logger.With("component", "tools"),
		opts:          opts,
		servers:       make(map[string]*server, len(servers)),
		fetcher:       f,
		guildFetchers: guildFetchers,
		outboundAllow: outboundAllow,
		httpTransport: opts.HTTPTransport,
		ctx:           ctx,
		cancel:        cancel,
		sessions:      make(map[*session]struct{}),
	}
	if m.httpTransport == nil {
		m.httpTransport = &http.Transport{
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: opts.CallTimeout,
		}
	}
	for _, s := range servers {
		switch {
		case !serverName.MatchString(s.Name):
			err = fmt.Errorf("server %q: name must be 1 to 32 characters a-z, 0-9 and -", s.Name)
		case m.servers[s.Name] != nil:
			err = fmt.Errorf("server %q: declared twice", s.Name)
		case (len(s.Command) > 0) == (s.URL != ""):
			err = fmt.Errorf("server %q: needs exactly one of a command and a URL", s.Name)
		case len(s.Command) > 0 && s.Command[0] == "":
			err = fmt.Errorf("server %q: the command's program is empty", s.Name)
		}
		if err != nil {
			cancel()
			f.Close()
			return nil, err
		}
		m.servers[s.Name] = &server{spec: s, m: m}
		m.order = append(m.order, s.Name)
	}
	return m, nil
}

// errClosed is what calls get once Close has begun.
var errClosed = errors.New("tools are shut down")

// goOwned runs f on a goroutine that Close waits for, unless Close has
// begun.
func (m *Manager) goOwned(f func()) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		f()
	}()
	return nil
}

// track records an open session so Close can kill it; it refuses once
// Close has begun.
func (m *Manager) track(s *session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return errClosed
	}
	m.sessions[s] = struct{}{}
	return nil
}

func (m *Manager) untrack(s *session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, s)
}

// Close stops every server: each stdio server's input is closed, and it
// is terminated if it does not exit within a few seconds; HTTP sessions
// are ended. When ctx ends first, the remaining processes are killed and
// Close returns once they are gone. Calls after Close get an error result.
func (m *Manager) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	var closing sync.WaitGroup
	for _, s := range m.servers {
		s.mu.Lock()
		live := s.live
		s.live = nil
		s.mu.Unlock()
		if live != nil {
			closing.Go(func() { live.close(m) })
		}
	}
	done := make(chan struct{})
	go func() {
		closing.Wait()
		m.wg.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		m.mu.Lock()
		for s := range m.sessions {
			s.kill()
		}
		m.mu.Unlock()
		<-done
		err = fmt.Errorf("close tools: %w", ctx.Err())
	}
	m.fetcher.Close()
	for _, f := range m.guildFetchers {
		f.Close()
	}
	if t, ok := m.httpTransport.(interface{ CloseIdleConnections() }); ok && m.opts.HTTPTransport == nil {
		t.CloseIdleConnections()
	}
	return err
}

// Check reports entries of a role's tools list that do not name
// fetch_url or a tool of a configured server granted to guild ("": any),
// as /roles set needs to before it saves a role.
func (m *Manager) Check(guild string, allowed []string) error {
	_, err := m.parseAllowed(guild, allowed)
	return err
}

// Allows says whether a role with the tools list allowed may call the
// tool named name (as the model calls it): a name a function may have
// (what a model makes up beyond that is no tool's), that the list names.
// Call does not check: a model may call a function it was not offered,
// so check the name first.
func Allows(allowed []string, name string) bool {
	if !functionName.MatchString(name) {
		return false
	}
	for _, a := range allowed {
		a = strings.TrimSpace(a)
		if a == FetchURL {
			if name == FetchURL {
				return true
			}
			continue
		}
		srv, tool, ok := strings.Cut(a, ".")
		if !ok {
			continue
		}
		if name == srv+Separator+tool || (tool == "*" && strings.HasPrefix(name, srv+Separator) && len(name) > len(srv)+len(Separator)) {
			return true
		}
	}
	return false
}
