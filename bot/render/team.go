package render

import (
	"fmt"
	"strings"

	"github.com/callonbot/callon/master"
)

// Embed is a Discord embed, in domain terms.
type Embed struct {
	Title       string
	Description string
	Fields      []EmbedField
	Footer      string
}

// EmbedField is one field of an Embed.
type EmbedField struct {
	Name   string
	Value  string
	Inline bool
}

// Discord's embed limits.
const (
	embedTitleMax       = 256
	embedDescriptionMax = 4096
	embedFieldNameMax   = 256
	embedFieldValueMax  = 1024
	embedFooterMax      = 2048
	embedTotalMax       = 6000
)

// Team builds the /team embed, within Discord's limits.
func Team(v master.TeamView) Embed {
	e := Embed{
		Title: "Team: " + oneLine(v.Session.Goal, embedTitleMax-6),
		Description: fmt.Sprintf("**Goal:** %s\nStarted <t:%d:R>\n%s-# %s", master.Truncate(v.Session.Goal, 1500), v.Session.CreatedAt.Unix(),
			dormantLine(v.Session), master.AddressingHelp(v.Roster)),
	}
	var members strings.Builder
	for _, m := range master.Members(v.Roster, v.Turn, v.Tasks) {
		model := m.Role.Model
		if model == "" {
			model = v.WorkerModel
		}
		fmt.Fprintf(&members, "%s **%s** · `%s` · %s%s\n", stateIcon(m.State), m.Role.Name, model, m.State, master.ToolsLine(" · tools: ", m.Role.Tools))
	}
	e.Fields = append(e.Fields, EmbedField{Name: "Members", Value: members.String()})
	e.Fields = append(e.Fields, presenceField(v))
	if len(v.Reliability) > 0 {
		var rel strings.Builder
		for _, r := range v.Reliability {
			fmt.Fprintf(&rel, "**%s** · %s\n", r.Role, master.ReliabilityLine(r))
		}
		e.Fields = append(e.Fields, EmbedField{Name: "Reliability (last 7 days in this channel)", Value: rel.String()})
	}

	var work strings.Builder
	switch {
	case v.Turn == nil:
		work.WriteString("No messages yet: talk to the team in this thread.")
	case len(v.Tasks) == 0:
		fmt.Fprintf(&work, "Turn %s, answered directly.", v.Turn.State)
	default:
		fmt.Fprintf(&work, "Turn %s · round %d\n", v.Turn.State, v.Turn.Round)
		for _, t := range v.Tasks {
			fmt.Fprintf(&work, "• r%d **%s** — %s", t.Round, t.Role, stateLabel(t.State))
			if p, ok := v.Progress[t.ID]; ok && t.State == master.TaskRunning {
				fmt.Fprintf(&work, " · %d%% %s", p.Percent, oneLine(p.Note, 60))
			}
			work.WriteString(activity(v.Calls, t))
			switch {
			case !t.EndedAt.IsZero() && !t.StartedAt.IsZero():
				fmt.Fprintf(&work, " · %s", master.Elapsed(t.EndedAt.Sub(t.StartedAt)))
			case !t.StartedAt.IsZero():
				fmt.Fprintf(&work, " · %s", master.Elapsed(v.Now.Sub(t.StartedAt)))
			default:
				fmt.Fprintf(&work, " · waiting %s", master.Elapsed(v.Now.Sub(t.CreatedAt)))
			}
			work.WriteString("\n")
		}
	}
	e.Fields = append(e.Fields, EmbedField{Name: "Current work", Value: work.String()})

	if v.Session.ReportTo != "" || len(v.Dispatched) > 0 {
		var hb strings.Builder
		if v.Session.ReportTo != "" {
			fmt.Fprintf(&hb, "📨 Reports to <#%s>\n", v.Session.ReportTo)
		}
		for _, d := range v.Dispatched {
			fmt.Fprintf(&hb, "🚀 Dispatched <#%s> (%s): %s\n", d.ThreadID, d.State, oneLine(d.Goal, 80))
		}
		e.Fields = append(e.Fields, EmbedField{Name: "Hand-back", Value: hb.String()})
	}

	var events strings.Builder
	for i := len(v.Signals) - 1; i >= 0; i-- { // newest first
		s := v.Signals[i]
		fmt.Fprintf(&events, "• %s · <t:%d:R>\n", master.DescribeSignal(s), s.At.Unix())
	}
	if events.Len() == 0 {
		events.WriteString("None yet.")
	}
	e.Fields = append(e.Fields, EmbedField{Name: "Latest events", Value: events.String()})
	spent := fmt.Sprintf("Tokens used: %s (%s prompt, %s completion)",
		master.Tokens(v.Session.Usage.Total()), master.Tokens(v.Session.Usage.PromptTokens), master.Tokens(v.Session.Usage.CompletionTokens))
	if v.Budget > 0 {
		spent += fmt.Sprintf(" of a budget of %s", master.Tokens(v.Budget))
	}
	if c := v.Cost.String(); c != "" {
		spent += " · cost " + c
	}
	e.Footer = fmt.Sprintf("%s · session #%d", spent, v.Session.ID)
	return e.Fit()
}

func stateIcon(s master.MemberState) string {
	switch s {
	case master.MemberWorking:
		return "🟢"
	case master.MemberBlocked:
		return "🟠"
	default:
		return "⚪"
	}
}

// Fit truncates an embed to Discord's limits: each part to its own limit,
// then fields from the last until the total fits.
func (e Embed) Fit() Embed {
	e.Title = master.Truncate(strings.TrimSpace(e.Title), embedTitleMax)
	e.Description = master.Truncate(strings.TrimSpace(e.Description), embedDescriptionMax)
	e.Footer = master.Truncate(e.Footer, embedFooterMax)
	if len(e.Fields) > 25 {
		e.Fields = e.Fields[:25]
	}
	fields := make([]EmbedField, len(e.Fields))
	for i, f := range e.Fields {
		f.Name = master.Truncate(f.Name, embedFieldNameMax)
		f.Value = truncateLines(strings.TrimSpace(f.Value), embedFieldValueMax)
		if f.Value == "" {
			f.Value = "—"
		}
		fields[i] = f
	}
	e.Fields = fields
	for i := len(e.Fields) - 1; e.total() > embedTotalMax && i >= 0; i-- {
		over := e.total() - embedTotalMax
		keep := max(len([]rune(e.Fields[i].Value))-over, 40)
		e.Fields[i].Value = truncateLines(e.Fields[i].Value, keep)
	}
	if e.total() > embedTotalMax {
		e.Description = master.Truncate(e.Description, max(len([]rune(e.Description))-(e.total()-embedTotalMax), 1))
	}
	return e
}

func (e Embed) total() int {
	n := len([]rune(e.Title)) + len([]rune(e.Description)) + len([]rune(e.Footer))
	for _, f := range e.Fields {
		n += len([]rune(f.Name)) + len([]rune(f.Value))
	}
	return n
}

// truncateLines keeps whole lines while they fit in max characters, and
// says how many were left out.
func truncateLines(s string, max int) string {
	if len([]rune(s)) <= max {
		return s
	}
	lines := strings.Split(s, "\n")
	var b strings.Builder
	for i, l := range lines {
		more := fmt.Sprintf("… and %d more", len(lines)-i)
		if len([]rune(b.String()))+len([]rune(l))+1+len([]rune(more)) > max {
			if b.Len() == 0 {
				return master.Truncate(s, max)
			}
			b.WriteString(more)
			return b.String()
		}
		b.WriteString(l + "\n")
	}
	return strings.TrimSpace(b.String())
}

// dormantLine says that a team is dormant, and what that means; "" for
// a team that is awake.
func dormantLine(s master.Session) string {
	if s.DormantSince.IsZero() {
		return ""
	}
	return fmt.Sprintf("💤 **Dormant** since <t:%d:R>: it costs nothing and counts against no cap; the next message here wakes it.\n",
		s.DormantSince.Unix())
}
