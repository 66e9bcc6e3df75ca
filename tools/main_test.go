package tools_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/tools"
)

// serverBin is the mcptestserver binary, built once for the package's
// tests by TestMain.
var serverBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcptestserver")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "mcptestserver")
	build := exec.Command("go", "build", "-o", serverBin, "github.com/callonbot/callon/tools/mcptest/cmd/mcptestserver")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build mcptestserver: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// stdioServer is the test server over stdio, named name, with env.
func stdioServer(name string, env map[string]string) tools.Server {
	return tools.Server{Name: name, Command: []string{serverBin}, Env: env}
}

// setup returns a Manager closed when the test ends.
func setup(tb testing.TB, servers []tools.Server, opts tools.Options, logger *slog.Logger) *tools.Manager {
	tb.Helper()
	m, err := tools.New(servers, logger, opts)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			tb.Errorf("Close: %v", err)
		}
	})
	return m
}

// offer asks for a role's tools and fails the test on an error.
func offer(tb testing.TB, m *tools.Manager, allowed ...string) tools.Offer {
	tb.Helper()
	o, err := m.Tools(tb.Context(), "", allowed)
	if err != nil {
		tb.Fatalf("Tools(%q): %v", allowed, err)
	}
	return o
}

func toolNames(o tools.Offer) []string {
	var names []string
	for _, t := range o.Tools {
		names = append(names, t.Name)
	}
	return names
}

// lines reads a file the test server appends process ids to.
func lines(tb testing.TB, path string) []string {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	return strings.Fields(string(data))
}

// logRecorder is a slog handler that keeps what is logged.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	return nil
}

// count is how many records with the message and level were logged.
func (h *logRecorder) count(level slog.Level, msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(slices.DeleteFunc(slices.Clone(h.records), func(r slog.Record) bool {
		return r.Level != level || r.Message != msg
	}))
}

// attr is the value of key in the first record with the level and message.
func (h *logRecorder) attr(level slog.Level, msg, key string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if r.Level != level || r.Message != msg {
			continue
		}
		var v string
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				v = a.Value.String()
				return false
			}
			return true
		})
		return v
	}
	return ""
}
