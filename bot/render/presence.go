package render

import (
	"fmt"
	"strings"

	"github.com/callonbot/callon/master"
)

// presenceField is /team's line per feature: which members speak in
// their own names, the channel's memory, the reviewer's verdicts.
func presenceField(v master.TeamView) EmbedField {
	f := v.Session.Features
	var b strings.Builder
	if f.Personas {
		names := make([]string, len(v.Roster))
		for i, r := range v.Roster {
			names[i] = "**" + master.PersonaName(r.Name) + "**"
		}
		fmt.Fprintf(&b, "🎭 Personas: %s post their parts of replies in their own names\n", strings.Join(names, ", "))
	} else {
		b.WriteString("🎭 Personas: off (the coordinator speaks for the team)\n")
	}
	if f.Memory {
		fmt.Fprintf(&b, "🧠 Memory: on · %d %s kept in this channel\n", v.Presence.Notes, plural(v.Presence.Notes, "note", "notes"))
	} else {
		b.WriteString("🧠 Memory: off\n")
	}
	p := v.Presence
	switch f.Review {
	case master.ReviewOn, master.ReviewAlways:
		what := "merged replies"
		if f.Review == master.ReviewAlways {
			what = "every reply"
		}
		fmt.Fprintf(&b, "🔎 Review: %s (%s) · %d passed, %d sent back", f.Review, what, p.Passed, p.Revised)
		if p.Skipped > 0 {
			fmt.Fprintf(&b, ", %d unreviewed", p.Skipped)
		}
	default:
		b.WriteString("🔎 Review: off")
	}
	return EmbedField{Name: "Presence", Value: b.String()}
}
