package terminal

import (
	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
)

// styles are the chat's looks, bound to its terminal's renderer.
type styles struct {
	profile                              termenv.Profile
	title, faint, you, team, prompt, key lipgloss.Style
	status, box                          lipgloss.Style
}

func newStyles(r *lipgloss.Renderer) styles {
	accent := lipgloss.AdaptiveColor{Light: "#5A3FC0", Dark: "#B9A7FF"}
	return styles{
		profile: r.ColorProfile(),
		title:   r.NewStyle().Bold(true).Foreground(accent),
		faint:   r.NewStyle().Faint(true),
		you:     r.NewStyle().Bold(true).Foreground(lipgloss.AdaptiveColor{Light: "#1F6FB2", Dark: "#7CC4FF"}),
		team:    r.NewStyle().Bold(true).Foreground(accent),
		prompt:  r.NewStyle().Bold(true).Foreground(accent),
		key:     r.NewStyle().Faint(true),
		status:  r.NewStyle().PaddingLeft(1).BorderStyle(lipgloss.NormalBorder()).BorderLeft(true).BorderForeground(accent),
		box:     r.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(lipgloss.Color("214")).Padding(0, 1),
	}
}
