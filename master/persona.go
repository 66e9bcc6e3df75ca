package master

import (
	"context"
	"strings"
)

// Line is one member's part of a reply presented as an exchange between
// the team's members (personas): written by the master, like the rest of
// its reply.
type Line struct {
	Member string `json:"member"`
	Text   string `json:"text"`
}

// reply ends the turn with the master's reply (after its review, if any):
// the coordinator's text with the reviewer's caveat under it, then the
// members' parts when the team speaks with personas.
func (o *Orchestrator) reply(ctx context.Context, g Guard, tc turnContext, text string, exchange []Line, caveat string, usage Usage) error {
	return o.end(ctx, g, tc.turn, OutcomeReply, withCaveat(text, caveat), usage)
}

// PersonaName is the name a member posts under: its role's name in words
// ("market-analyst" → "Market analyst"). Discord refuses a webhook's
// username that contains "discord" or "clyde" or is "everyone" or
// "here", so those are broken up or qualified; role names are slugs, so
// nothing else it refuses (@, #, :, ```) can occur, and it stays within
// the 80 characters allowed.
func PersonaName(role string) string {
	name := strings.NewReplacer("-", " ", "_", " ").Replace(strings.TrimSpace(role))
	if name == "" {
		return "Member"
	}
	name = strings.ToUpper(name[:1]) + name[1:]
	for _, bad := range []string{"discord", "clyde"} {
		for {
			i := strings.Index(strings.ToLower(name), bad)
			if i < 0 {
				break
			}
			name = name[:i+3] + "-" + name[i+3:]
		}
	}
	switch strings.ToLower(name) {
	case "everyone", "here":
		name += " (member)"
	}
	return Truncate(name, 80)
}
