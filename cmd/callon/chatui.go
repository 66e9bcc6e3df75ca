package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/callonbot/callon/terminal"
)

// chatUI is the native terminal UI of a chat: when its input and output
// are both a terminal (and --plain is not given).
type chatUI struct {
	in, out *os.File
}

// chooseUI returns the terminal UI, or nil for plain lines (scripts,
// pipes, tests).
func chooseUI(f chatFlags, stdin io.Reader, stdout io.Writer) *chatUI {
	in, ok1 := stdin.(*os.File)
	out, ok2 := stdout.(*os.File)
	if f.plain || !ok1 || !ok2 || !terminal.IsTerminal(in) || !terminal.IsTerminal(out) {
		return nil
	}
	return &chatUI{in: in, out: out}
}

func (u *chatUI) run(ctx context.Context, team terminal.Team, m *terminal.Messenger, opt terminal.Options) (terminal.Outcome, error) {
	return terminal.RunTUI(ctx, u.in, u.out, team, m, opt)
}

// chatLog is where a chat logs: to stderr in plain mode (a script keeps
// it apart from the chat); in the terminal UI to a file, whose path is
// returned, or, verbose, into the chat itself.
func chatLog(getenv func(string) string, tui, verbose bool, m *terminal.Messenger, stderr io.Writer) (path string, w io.Writer, closeLog func(), err error) {
	switch {
	case !tui:
		return "", stderr, func() {}, nil
	case verbose:
		return "", &logLines{m: m}, func() {}, nil
	}
	var dirs []string
	if d := getenv("XDG_STATE_HOME"); d != "" {
		dirs = append(dirs, d)
	} else if h := getenv("HOME"); h != "" {
		dirs = append(dirs, filepath.Join(h, ".local", "state"))
	}
	// A container's user may have no home it can write: the temporary
	// directory then.
	dirs = append(dirs, os.TempDir())
	var errs []error
	for _, dir := range dirs {
		path = filepath.Join(dir, "callon", "chat.log")
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			errs = append(errs, err)
			continue
		}
		file, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return path, file, func() { file.Close() }, nil
	}
	return "", nil, nil, fmt.Errorf("the chat's log: %w (or run with --verbose)", errors.Join(errs...))
}

// logLines shows log lines in the chat.
type logLines struct{ m *terminal.Messenger }

func (l *logLines) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		l.m.Log(line)
	}
	return len(p), nil
}
