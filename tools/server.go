package tools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/callonbot/callon/redact"
)

// stableAfter is how long a session must last for its end not to count
// as a failure: a server that dies sooner is crash-looping, and waits
// longer before each restart.
const stableAfter = time.Minute

// server is one configured MCP server and its current session, if any.
type server struct {
	spec Server
	m    *Manager

	mu       sync.Mutex
	live     *session      // nil while not running
	starting chan struct{} // non-nil while a start is under way; closed when it ends
	failures int           // failed starts and short sessions in a row
	retryAt  time.Time     // no start before this
	lastErr  error         // why the server is not running
	reported bool          // the current run of failures has been logged as a warning
}

// session returns a running session of the server, starting it if it is
// not running. Whoever comes first starts it, on a goroutine of the
// Manager's, and everyone waits for that start (or for their ctx). A
// caller sets off at most one start, and none before the backoff after a
// failure has passed, so no path restarts a failing server in a loop.
func (s *server) session(ctx context.Context) (*session, error) {
	tried := false
	for {
		s.mu.Lock()
		if s.live != nil {
			live := s.live
			s.mu.Unlock()
			return live, nil
		}
		if ch := s.starting; ch != nil {
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if tried || time.Now().Before(s.retryAt) {
			err := s.unavailable()
			s.mu.Unlock()
			return nil, err
		}
		tried = true
		ch := make(chan struct{})
		if err := s.m.goOwned(func() { s.start(ch) }); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		s.starting = ch
		s.mu.Unlock()
	}
}

// secrets are what the server's configuration holds that no error may
// show: its headers' values, and the values of its environment variables
// named like credentials (its URL's userinfo and query are found by
// redact itself).
func (s *server) secrets() []string {
	var out []string
	for _, v := range s.spec.Headers {
		out = append(out, v)
	}
	for k, v := range s.spec.Env {
		if credentialName.MatchString(k) {
			out = append(out, v)
		}
	}
	return out
}

// credentialName is an environment variable's name that says it holds a
// secret.
var credentialName = regexp.MustCompile(`(?i)key|token|secret|pass|auth|cred`)

// scrub is err without the server's secrets: what the server's errors
// become before they reach a model, a row or a log line.
func (s *server) scrub(err error) error { return redact.Error(err, s.secrets()...) }

// unavailable says why the server is not running. s.mu is held.
func (s *server) unavailable() error {
	err := fmt.Errorf("MCP server %s is unavailable: %w", s.spec.Name, s.lastErr)
	if wait := time.Until(s.retryAt); wait > 0 {
		err = fmt.Errorf("%w (next try in %s)", err, wait.Round(time.Second))
	}
	return err
}

// start connects to the server and lists its tools, then closes ch.
func (s *server) start(ch chan struct{}) {
	defer close(ch)
	ctx, cancel := context.WithTimeout(s.m.ctx, s.m.opts.StartTimeout)
	defer cancel()
	began := time.Now()
	sess, err := connect(ctx, s.m, s.spec)
	if err == nil {
		if err = s.m.track(sess); err == nil {
			_, err = sess.listTools(ctx)
		}
	}
	if err != nil && s.m.ctx.Err() != nil {
		err = errClosed
	}

	s.mu.Lock()
	s.starting = nil
	if err == nil {
		s.live = sess
		if err = s.m.goOwned(func() { s.watch(sess) }); err != nil {
			s.live = nil
		}
	}
	if err != nil {
		s.fail("mcp server unavailable", err)
	} else {
		// A crash-looping server logs its first restart, not each one.
		level := slog.LevelInfo
		if s.failures > 1 {
			level = slog.LevelDebug
		}
		attrs := []any{"server", s.spec.Name, "took", time.Since(began).Round(time.Millisecond), "failures", s.failures}
		if pid := sess.pid(); pid != 0 {
			attrs = append(attrs, "pid", pid)
		}
		s.m.log.Log(context.Background(), level, "mcp server started", attrs...)
	}
	s.mu.Unlock()
	if err != nil && sess != nil {
		sess.close(s.m)
	}
}

// fail records a failure and when to try again. The first failure of a
// run (which ends when a session lasts) is logged as a warning, the rest
// at debug level. s.mu is held.
func (s *server) fail(msg string, err error) {
	err = s.scrub(err)
	s.lastErr = err
	if err == errClosed {
		return
	}
	s.failures++
	wait := s.backoff()
	s.retryAt = time.Now().Add(wait)
	level := slog.LevelWarn
	if s.reported {
		level = slog.LevelDebug
	}
	s.reported = true
	attrs := []any{"server", s.spec.Name, "err", err, "failures", s.failures, "retry_in", wait}
	if se, ok := errors.AsType[*stderrError](err); ok && se.stderr != "" {
		attrs = append(attrs, "stderr", redact.Text(se.stderr, s.secrets()...))
	}
	s.m.log.Log(context.Background(), level, msg, attrs...)
}

// backoff is the wait before the next start: none after one failure,
// then RestartDelay doubling up to MaxRestartDelay. s.mu is held.
func (s *server) backoff() time.Duration {
	if s.failures <= 1 {
		return 0
	}
	d := s.m.opts.RestartDelay
	for i := 2; i < s.failures && d < s.m.opts.MaxRestartDelay; i++ {
		d *= 2
	}
	return min(d, s.m.opts.MaxRestartDelay)
}

// watch waits for the session to end, by the server's doing, and
// retires it.
func (s *server) watch(sess *session) {
	err := sess.cs.Wait()
	if err == nil {
		err = fmt.Errorf("the server closed the session")
	}
	s.retire(sess, err)
}

// retire takes a session that has ended or broken out of service, so
// that the next use starts the server again, and closes it.
func (s *server) retire(sess *session, cause error) {
	s.mu.Lock()
	if s.live == sess {
		s.live = nil
		lived := time.Since(sess.started)
		if lived >= stableAfter {
			// It ran well: this is a new run of failures, worth a warning.
			s.failures, s.reported = 0, false
		}
		s.fail("mcp server stopped", &stderrError{err: fmt.Errorf("stopped: %w", cause), stderr: sess.stderrTail()})
	}
	s.mu.Unlock()
	sess.close(s.m)
}
