package master

import (
	"fmt"
	"strings"
)

// RenderNotes is /memory show's answer: a channel's notes, each with its
// number, its text as inline code (a note renders no Markdown and
// mentions nobody), who the master was answering and when it was last
// remembered. It fits in one message: what does not fit is counted.
func RenderNotes(channelID string, notes []Note) string {
	var b strings.Builder
	if len(notes) == 0 {
		return fmt.Sprintf("The teams of <#%s> keep no notes.", channelID)
	}
	fmt.Fprintf(&b, "**Notes the teams of <#%s> keep** (%d of at most %d; `/memory forget` removes one):\n", channelID, len(notes), MaxNotes)
	for i, n := range notes {
		line := fmt.Sprintf("• **%d** %s", n.ID, codeSpan(n.Text))
		if n.AuthorID != "" {
			line += fmt.Sprintf(" · for <@%s>", n.AuthorID)
		}
		line += fmt.Sprintf(" · <t:%d:R>\n", n.UpdatedAt.Unix())
		if !fits(&b, line, 40) {
			fmt.Fprintf(&b, "…and %d more\n", len(notes)-i)
			break
		}
		b.WriteString(line)
	}
	return strings.TrimRight(b.String(), "\n")
}
