package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/callonbot/callon/store/storetest"
)

// screen is what a pseudo-terminal's program wrote, escape sequences
// removed, for tests to wait on.
type screen struct {
	mu      sync.Mutex
	raw     bytes.Buffer
	changed chan struct{}
}

var escapes = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[@-Z\\-_]`)

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.raw.Write(p)
	close(s.changed)
	s.changed = make(chan struct{})
	return len(p), nil
}

// text is everything written so far, without escape sequences.
func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return escapes.ReplaceAllString(s.raw.String(), "")
}

// waitFor waits until the program wrote want (after the first from
// bytes of text), and returns where it ends.
func (s *screen) waitFor(t *testing.T, from int, want string, ended <-chan error) int {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		got := s.text()
		if i := strings.Index(got[min(from, len(got)):], want); i >= 0 {
			return min(from, len(got)) + i + len(want)
		}
		select {
		case <-changed:
		case err := <-ended:
			t.Fatalf("callon chat ended (%v) before it showed %q; the terminal shows:\n%s", err, want, got)
		case <-deadline.C:
			t.Fatalf("waited 30 s for %q; the terminal shows:\n%s", want, got)
		}
	}
}

// callon chat in a pseudo-terminal: the terminal UI opens with its
// banner, a message goes to the team, its request for approval is a
// prompt that y approves, the reply is rendered, and Ctrl-C asks whether
// to leave the team or dissolve it: l leaves it, for --resume.
func TestChatTerminal(t *testing.T) {
	t.Parallel()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open a pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { ptmx.Close(); tty.Close() })
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	scr := &screen{changed: make(chan struct{})}
	go io.Copy(scr, ptmx)
	state := t.TempDir()
	db := storetest.URL(t)
	env := map[string]string{"DATABASE_URL": db, "LOG_LEVEL": "debug", "XDG_STATE_HOME": state}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"chat", "--demo"}, func(k string) string { return env[k] }, tty, tty, &stderr)
	}()
	key := func(s string) {
		t.Helper()
		if _, err := ptmx.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}

	at := scr.waitFor(t, 0, "New team #1", done)
	at = scr.waitFor(t, at, "Log: "+state+"/callon/chat.log", done)
	at = scr.waitFor(t, at, "Team assembled", done)
	key("roll the dice\r")
	at = scr.waitFor(t, at, "you › roll the dice", done)
	at = scr.waitFor(t, at, "Request 1:", done)
	at = scr.waitFor(t, at, "Tab, then y or n", done)
	// A letter typed now is the next message's, not the decision: had it
	// approved, Tab would find no request to decide.
	key("y\x7f\t")
	at = scr.waitFor(t, at, "y approve", done)
	key("y")
	at = scr.waitFor(t, at, "Approved by you", done)
	at = scr.waitFor(t, at, "The engineer used the demo tool", done)
	at = scr.waitFor(t, at, "🎲", done)
	key("\x03") // Ctrl-C
	at = scr.waitFor(t, at, "Leave the chat?", done)
	key("l")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("callon chat: %v\n%s", err, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("callon chat did not end after l; the terminal shows:\n%s", scr.text())
	}
	// ptmx still holds what was written last.
	scr.waitFor(t, at, "callon chat --demo --resume reopens it", make(chan error))
	if stderr.Len() > 0 {
		t.Errorf("the chat wrote to stderr, which the terminal UI shares:\n%s", stderr.String())
	}
	log, err := os.ReadFile(state + "/callon/chat.log")
	if err != nil || !bytes.Contains(log, []byte("call decided")) {
		t.Errorf("the log file (%v) lacks the decision:\n%s", err, log)
	}
	if got := scr.text(); strings.Contains(got, "<@you>") || strings.Contains(got, "<t:") {
		t.Errorf("the terminal shows Discord markup:\n%s", got)
	}
}
