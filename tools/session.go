package tools

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/callonbot/callon/internal/proc"
)

const (
	// maxTools bounds the tools taken from one server.
	maxTools = 256
	// terminateWait is how long a stdio server has to exit once its input
	// is closed, and then once it is sent SIGTERM, before it is killed.
	terminateWait = 2 * time.Second
	// stderrKept is how much of a stdio server's latest stderr is kept,
	// to say why it stopped.
	stderrKept = 2 << 10
)

// session is one connection to a running server.
type session struct {
	cs      *mcp.ClientSession
	cmd     *exec.Cmd   // stdio only
	stderr  *tailWriter // stdio only
	started time.Time
	// overflow is set when a response of an HTTP server was cut at
	// Options.MaxResponse, for the failed call to say so.
	overflow atomic.Bool

	closeOnce sync.Once

	mu    sync.Mutex
	tools []*mcp.Tool // nil until listed, and again when the server says they changed
}

// connect starts or reaches the server and opens an MCP session with it.
// ctx bounds the connection's setup only, not the session.
func connect(ctx context.Context, m *Manager, spec Server) (*session, error) {
	sess := &session{started: time.Now()}
	client := mcp.NewClient(&mcp.Implementation{Name: "callon", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{}, // no roots, sampling or elicitation
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			sess.forgetTools()
		},
	})
	var t mcp.Transport
	if len(spec.Command) > 0 {
		sess.stderr = &tailWriter{}
		sess.cmd = exec.Command(spec.Command[0], spec.Command[1:]...)
		sess.cmd.Env = environ(m.opts.BaseEnv, spec.Env)
		sess.cmd.Stderr = sess.stderr
		// A grandchild holding stderr open must not hold up Wait.
		sess.cmd.WaitDelay = terminateWait
		t = &mcp.CommandTransport{Command: sess.cmd, TerminateDuration: terminateWait}
	} else {
		t = &mcp.StreamableClientTransport{
			Endpoint: spec.URL,
			HTTPClient: &http.Client{Transport: &headerTransport{base: m.httpTransport, headers: spec.Headers,
				maxBody: m.opts.MaxResponse, overflow: &sess.overflow}},
			MaxRetries: 2,
		}
	}
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		if sess.cmd != nil && sess.cmd.Process != nil {
			// The SDK closes what it started; this only makes sure.
			_ = sess.cmd.Process.Kill() // gone already is as good
		}
		return nil, &stderrError{err: fmt.Errorf("start: %w", err), stderr: sess.stderrTail()}
	}
	sess.cs = cs
	return sess, nil
}

// environ is base with env added, env's keys winning, in a stable order.
func environ(base []string, env map[string]string) []string {
	out := make([]string, 0, len(base)+len(env))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := env[k]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// listTools returns the server's tools, listing them once per session
// (again after the server says they changed).
func (s *session) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	s.mu.Lock()
	tools := s.tools
	s.mu.Unlock()
	if tools != nil {
		return tools, nil
	}
	tools = []*mcp.Tool{}
	for t, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		if len(tools) == maxTools {
			break
		}
		tools = append(tools, t)
	}
	slices.SortFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	s.mu.Lock()
	s.tools = tools
	s.mu.Unlock()
	return tools, nil
}

func (s *session) forgetTools() {
	s.mu.Lock()
	s.tools = nil
	s.mu.Unlock()
}

// close ends the session: a stdio server's input is closed and the
// process waited for (terminated, then killed, if it lingers).
func (s *session) close(m *Manager) {
	s.closeOnce.Do(func() {
		if s.cs != nil {
			s.cs.Close()
		}
		m.untrack(s)
	})
}

// kill kills a stdio server's process at once.
func (s *session) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill() // gone already is as good
	}
}

// stderrTail is the end of a stdio server's stderr, or "".
func (s *session) stderrTail() string {
	if s.stderr == nil {
		return ""
	}
	return s.stderr.String()
}

// stderrError is an error of a stdio server with the end of its stderr,
// which goes to the log but not into the error's text: what a server
// prints is not for models to read.
type stderrError struct {
	err    error
	stderr string
}

func (e *stderrError) Error() string { return e.err.Error() }
func (e *stderrError) Unwrap() error { return e.err }

// tailWriter keeps the end of what is written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if over := len(w.buf) - stderrKept; over > 0 {
		w.buf = append(w.buf[:0], w.buf[over:]...)
	}
	return len(p), nil
}

// String is the last lines written, joined by " | ", at most 300 bytes.
func (w *tailWriter) String() string {
	w.mu.Lock()
	text := string(w.buf)
	w.mu.Unlock()
	var lines []string
	for l := range strings.Lines(text) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	s := strings.Join(lines, " | ")
	const keep = 300
	if len(s) > keep {
		s = "…" + strings.ToValidUTF8(s[len(s)-keep:], "")
	}
	return s
}

// headerTransport adds a server's configured headers to every request.
type headerTransport struct {
	base     http.RoundTripper
	headers  map[string]string
	maxBody  int64        // bytes of a response's body read before it fails
	overflow *atomic.Bool // set when one did
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil && t.maxBody > 0 {
		// The SDK reads a whole response before the output is cut to
		// MaxOutput: a server cannot make it read more than this.
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: t.maxBody, max: t.maxBody, overflow: t.overflow}
	}
	return resp, err
}

// cappedBody fails a read past max bytes.
type cappedBody struct {
	io.ReadCloser
	left, max int64
	overflow  *atomic.Bool
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		if b.overflow != nil {
			b.overflow.Store(true)
		}
		return 0, fmt.Errorf("the server's response is larger than %s: not read further", proc.ByteSize(int(b.max)))
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

var _ http.RoundTripper = (*headerTransport)(nil)

// pid is a stdio server's process id, for logs; 0 for HTTP servers.
func (s *session) pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}
