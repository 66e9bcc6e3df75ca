package render

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/callonbot/callon/master"
)

// Roles is the answer to /roles list for a channel: the roster a
// team started there gets, with each role's model, source and last change;
// the less specific sources it hides; and the latest changes. It fits in
// one Discord message: what does not fit is counted, not cut mid-line.
func Roles(channelID string, layers []master.RoleLayer, changes []master.RoleChange, p master.RolePolicy) string {
	used := layers[0]
	var b strings.Builder
	fmt.Fprintf(&b, "**Roles for teams started in <#%s>**: %s (%d)\n", channelID, used.Label(), len(used.Roles))
	for i, e := range used.Roles {
		line := roleLine(e, p)
		if !fits(&b, line, 120) {
			fmt.Fprintf(&b, "…and %d more\n", len(used.Roles)-i)
			break
		}
		b.WriteString(line)
	}
	if len(layers) > 1 {
		var hidden []string
		for _, l := range layers[1:] {
			hidden = append(hidden, fmt.Sprintf("%s (%d)", l.Label(), len(l.Roles)))
		}
		line := fmt.Sprintf("\nNot used here, since the roster above is more specific: %s.\n", strings.Join(hidden, ", "))
		if fits(&b, line, 0) {
			b.WriteString(line)
		}
	}
	if len(changes) > 0 && fits(&b, "\n**Recent changes**\n", 60) {
		b.WriteString("\n**Recent changes**\n")
		for _, c := range changes {
			line := changeLine(c)
			if !fits(&b, line, 0) {
				break
			}
			b.WriteString(line)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// fits reports whether s can be added to b leaving reserve characters.
func fits(b *strings.Builder, s string, reserve int) bool {
	return utf8.RuneCountInString(b.String())+utf8.RuneCountInString(s)+reserve <= master.MaxMessageLen
}

func roleLine(e master.RoleEntry, p master.RolePolicy) string {
	model := fmt.Sprintf("`%s`", p.ModelOf(e.Role))
	switch {
	case e.Model == "":
		model += " (default)"
	case !p.ModelAllowed(e.Model):
		model += fmt.Sprintf(" (`%s` is no longer allowed)", e.Model)
	}
	var extra []string
	if e.Temperature != nil {
		extra = append(extra, fmt.Sprintf("temperature %g", *e.Temperature))
	}
	if e.MaxTokens > 0 {
		extra = append(extra, fmt.Sprintf("max %d tokens", e.MaxTokens))
	}
	if e.Timeout > 0 {
		extra = append(extra, fmt.Sprintf("timeout %s", e.Timeout))
	}
	if len(e.Tools) > 0 {
		extra = append(extra, master.ToolsLine("tools ", e.Tools))
	}
	meta := append([]string{"model " + model}, extra...)
	meta = append(meta, "source: "+string(e.Source))
	if e.UpdatedBy != "" {
		meta = append(meta, fmt.Sprintf("set by <@%s> <t:%d:R>", e.UpdatedBy, e.UpdatedAt.Unix()))
	}
	return fmt.Sprintf("• **%s** — %s\n  %s\n  prompt: %s\n", e.Name, oneLine(e.Description, 120),
		strings.Join(meta, " · "), oneLine(e.Prompt, 90))
}

func changeLine(c master.RoleChange) string {
	where := "this channel"
	if c.Scope.ChannelID == "" {
		where = "this server"
	}
	var what string
	switch c.Action {
	case master.RoleSet:
		what = fmt.Sprintf("set %s in %s", quoteNames(c.Names), where)
	case master.RoleRemove:
		what = fmt.Sprintf("removed %s from %s", quoteNames(c.Names), where)
	case master.RoleFeatures:
		what = fmt.Sprintf("changed %s in %s", strings.Join(c.Names, ", "), where)
	default:
		what = fmt.Sprintf("reset %s (removed %s)", where, master.Truncate(quoteNames(c.Names), 200))
	}
	return fmt.Sprintf("• <t:%d:R> <@%s> %s\n", c.At.Unix(), c.By, what)
}

// quoteNames is names as `a`, `b`.
func quoteNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	return strings.Join(q, ", ")
}

// Notes is /memory show's answer: a channel's notes, each with its
// number, its text as inline code (a note renders no Markdown and
// mentions nobody), who the master was answering and when it was last
// remembered. It fits in one message: what does not fit is counted.
func Notes(channelID string, notes []master.Note) string {
	var b strings.Builder
	if len(notes) == 0 {
		return fmt.Sprintf("The teams of <#%s> keep no notes.", channelID)
	}
	fmt.Fprintf(&b, "**Notes the teams of <#%s> keep** (%d of at most %d; `/memory forget` removes one):\n", channelID, len(notes), master.MaxNotes)
	for i, n := range notes {
		line := fmt.Sprintf("• **%d** %s", n.ID, master.CodeSpan(n.Text))
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
