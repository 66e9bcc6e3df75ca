//go:build unix

package tools_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/callonbot/callon/tools"
)

// counterPID calls the counter tool and returns the id of the process
// that served it.
func counterPID(tb testing.TB, m *tools.Manager) int {
	tb.Helper()
	r := m.Call(tb.Context(), "", "test__counter", "")
	_, pid, ok := strings.Cut(r.Text, " by process ")
	n, err := strconv.Atoi(pid)
	if r.IsError || !ok || err != nil {
		tb.Fatalf("counter: got %+v, want its process id", r)
	}
	return n
}

// waitGone waits until no process pid exists, not even as a zombie: it
// has died and been waited for.
func waitGone(tb testing.TB, pid int) {
	tb.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(15 * time.Second)
	for {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		select {
		case <-tick.C:
		case <-timeout:
			tb.Fatalf("process %d still exists", pid)
		}
	}
}

func TestRestartAfterTheServerDies(t *testing.T) {
	t.Parallel()
	calls := filepath.Join(t.TempDir(), "calls")
	m := setup(t, []tools.Server{stdioServer("test", map[string]string{"MCPTEST_COUNTER_FILE": calls})}, tools.Options{}, nil)

	first := counterPID(t, m)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, first) // the Manager noticed, and reaped it
	second := counterPID(t, m)
	if second == first {
		t.Errorf("got process %d again, want a new one", second)
	}
	if got, want := lines(t, calls), []string{strconv.Itoa(first), strconv.Itoa(second)}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("counter calls by process: got %q, want %q (each call made exactly once)", got, want)
	}
}

func TestCloseStopsServers(t *testing.T) {
	t.Parallel()
	calls := filepath.Join(t.TempDir(), "calls")
	m, err := tools.New([]tools.Server{stdioServer("test", map[string]string{"MCPTEST_COUNTER_FILE": calls})}, nil, tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pid := counterPID(t, m)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("after Close, signalling process %d: got %v, want ESRCH (no such process)", pid, err)
	}
	if r := m.Call(t.Context(), "", "test__echo", `{"text": "x"}`); !r.IsError || !strings.Contains(r.Text, "shut down") {
		t.Errorf("after Close: got %+v, want an error result", r)
	}
	if err := m.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
