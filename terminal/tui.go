package terminal

import (
	"context"
	"errors"
	"os"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"
	"github.com/charmbracelet/x/term"
)

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return term.IsTerminal(f.Fd()) }

// RunTUI runs the chat's terminal UI on in and out, both a terminal,
// until the person leaves the team (Left) or dissolves it (Dissolved),
// or ctx ends (Left). What the team posts is printed above the UI, to
// stay in the terminal's scrollback; the status of the turn at work,
// requests waiting for approval and the input line are the live part
// below it.
func RunTUI(ctx context.Context, in, out *os.File, team Team, m *Messenger, opt Options) (Outcome, error) {
	defer m.Close()
	r := lipgloss.NewRenderer(out)
	mdl := newModel(ctx, team, m, opt, r)
	p := tea.NewProgram(mdl, tea.WithInput(in), tea.WithOutput(out), tea.WithContext(ctx), tea.WithoutSignalHandler())
	final, err := p.Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return Left, nil
	}
	if err != nil {
		return Left, err
	}
	return final.(*model).outcome, nil
}
