package master

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// replanMasterTool is the replan tool: the roles listed become the
// roster. /replan offers it alone to its own model call.
var replanMasterTool = masterTool{
	name: ToolReplan,
	schema: func(e decisionEnv) Tool {
		return Tool{
			Name: ToolReplan,
			Description: "Change the team: the roles listed become the whole roster (existing names keep their prompt). " +
				"Your turn continues afterwards.",
			Parameters: schema(object([]string{"roles", "reason"}, map[string]any{
				"roles": map[string]any{
					"type":     "array",
					"minItems": 1,
					"maxItems": e.maxRoles,
					"items": object([]string{"name", "description"}, map[string]any{
						"name":        map[string]any{"type": "string", "pattern": roleName.String()},
						"description": map[string]any{"type": "string"},
					}),
				},
				"reason": map[string]any{"type": "string"},
			})),
		}
	},
	parse: func(args string, e decisionEnv) (decision, error) {
		var d decision
		var a struct {
			Roles []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"roles"`
			Reason string `json:"reason"`
		}
		if err := DecodeArgs(args, &a); err != nil {
			return d, err
		}
		for _, r := range a.Roles {
			d.roles = append(d.roles, Role{Name: strings.TrimSpace(r.Name), Description: strings.TrimSpace(r.Description)})
		}
		if err := CheckRoster(d.roles, e.maxRoles); err != nil {
			return d, err
		}
		d.reason = strings.TrimSpace(a.Reason)
		return d, nil
	},
}

// CatalogFunc gives the roles configured for a channel (see Roles.Roster).
type CatalogFunc func(ctx context.Context, guildID, channelID string) ([]Role, error)

// rosterAfter is the one replan path, for /replan and the master's tool:
// the sketch's roles, merged with the old roster and the channel's
// catalog (see MergeRoster).
func rosterAfter(ctx context.Context, catalog CatalogFunc, s Session, old, sketch []Role) ([]Role, error) {
	roles, err := catalogOf(ctx, catalog, s)
	if err != nil {
		return nil, err
	}
	return MergeRoster(old, sketch, roles), nil
}

// catalogOf is the roles a team's channel offers: its configured roster
// (see Roles.Roster), then the built-in roles it does not name.
func catalogOf(ctx context.Context, catalog CatalogFunc, s Session) ([]Role, error) {
	var roles []Role
	if catalog != nil {
		var err error
		if roles, err = catalog(ctx, s.GuildID, s.ChannelID); err != nil {
			return nil, fmt.Errorf("channel roles: %w", err)
		}
	}
	for _, r := range DefaultRoles() {
		if _, ok := findRole(roles, r.Name); !ok {
			roles = append(roles, r)
		}
	}
	return roles, nil
}

// findRole returns the role of roster named name.
func findRole(roster []Role, name string) (Role, bool) {
	if i := slices.IndexFunc(roster, func(r Role) bool { return r.Name == name }); i >= 0 {
		return roster[i], true
	}
	return Role{}, false
}

// MergeRoster applies a replan's sketch: names that stay keep their
// prompt and model; new names take them from the channel's catalog when
// it has the name, else get a prompt from their description.
func MergeRoster(old, sketch, catalog []Role) []Role {
	out := make([]Role, 0, len(sketch))
	for _, s := range sketch {
		find := func(r Role) bool { return r.Name == s.Name }
		var r Role
		if i := slices.IndexFunc(old, find); i >= 0 {
			r = old[i]
		} else if i := slices.IndexFunc(catalog, find); i >= 0 {
			r = catalog[i]
		} else {
			r = Role{Name: s.Name, Prompt: "Your speciality: " + s.Description}
		}
		r.Description = s.Description
		out = append(out, r)
	}
	return out
}

// describeReplan says what a replan changed.
func describeReplan(old, roster []Role, reason string) string {
	var added, removed, changed []string
	for _, r := range roster {
		i := slices.IndexFunc(old, func(o Role) bool { return o.Name == r.Name })
		switch {
		case i < 0:
			added = append(added, fmt.Sprintf("**%s** (%s)", r.Name, Truncate(r.Description, 100)))
		case old[i].Description != r.Description:
			changed = append(changed, fmt.Sprintf("**%s** (%s)", r.Name, Truncate(r.Description, 100)))
		}
	}
	for _, o := range old {
		if !slices.ContainsFunc(roster, func(r Role) bool { return r.Name == o.Name }) {
			removed = append(removed, "**"+o.Name+"**")
		}
	}
	var b strings.Builder
	line := func(label string, items []string) {
		if len(items) > 0 {
			fmt.Fprintf(&b, "%s %s\n", label, strings.Join(items, ", "))
		}
	}
	line("➕ Added:", added)
	line("➖ Removed:", removed)
	line("✏️ Re-described:", changed)
	if len(added)+len(removed)+len(changed) == 0 {
		b.WriteString("No change to the roster.\n")
	}
	fmt.Fprintf(&b, "👥 Team: %s", strings.Join(RoleNames(roster), ", "))
	if reason != "" {
		fmt.Fprintf(&b, "\nReason: %s", Truncate(reason, 300))
	}
	return b.String()
}

func replanMessages(s Session, roster []Role, instruction string, maxRoles int) []Message {
	var b strings.Builder
	fmt.Fprintf(&b, "You reorganize a team that works in %s on this goal:\n%s\n\nThe team now:\n", inThread, s.Goal)
	for _, r := range roster {
		fmt.Fprintf(&b, "- %s: %s\n", r.Name, r.Description)
	}
	fmt.Fprintf(&b, "\nCall replan with the whole new roster (at most %d roles; names are lowercase slugs). "+
		"Keep the names of roles that stay, so they keep their prompts; add, remove or re-describe roles "+
		"as the request asks; give a one-line description for each and a short reason.", maxRoles)
	if instruction == "" {
		instruction = "Reorganize the team so it fits the goal best."
	}
	return []Message{{Role: RoleSystem, Content: b.String()}, {Role: RoleUser, Content: instruction}}
}
