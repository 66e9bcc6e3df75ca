package master

import (
	"fmt"
	"regexp"
	"strings"
)

var roleName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// ValidRoleName reports whether name is a lowercase slug of at most 32
// characters, starting with a letter.
func ValidRoleName(name string) bool { return roleName.MatchString(name) }

// DefaultRoles is the built-in roster used when nothing more specific is
// configured. Descriptions are what the master routes by.
func DefaultRoles() []Role {
	return []Role{
		{
			Name:        "researcher",
			Description: "Finds and checks facts, options and prior art; cites what it relies on and flags uncertainty.",
			Prompt: "You research. Gather the facts, options and trade-offs the instruction asks for. " +
				"Separate what you know from what you infer, name your sources where you have them, " +
				"and say plainly when something is uncertain or unknown. Be concise and structured.",
		},
		{
			Name:        "planner",
			Description: "Breaks a goal into concrete steps, milestones, risks and open questions.",
			Prompt: "You plan. Turn the instruction into an ordered, concrete plan: steps, owners or roles, " +
				"milestones, dependencies, risks with mitigations, and the open questions that block progress. " +
				"Prefer short numbered lists over prose.",
		},
		{
			Name:        "engineer",
			Description: "Designs and writes code, configs and technical solutions; explains how to run them.",
			Prompt: "You are a senior software engineer. Produce working, idiomatic code or technical designs for " +
				"the instruction. State assumptions, keep examples minimal and complete, use fenced code blocks, " +
				"and note how to test what you wrote.",
		},
		{
			Name:        "writer",
			Description: "Drafts and edits clear prose: announcements, docs, emails, summaries.",
			Prompt: "You write. Produce clear, well-structured text in the tone the instruction asks for " +
				"(default: friendly and direct). Use short paragraphs and " + markdownTone + ".",
		},
		{
			Name:        "reviewer",
			Description: "Critiques work for errors, gaps and risks, and proposes specific fixes.",
			Prompt: "You review. Examine the material you are given for mistakes, missing cases, unclear parts " +
				"and risks. Be specific: quote the problem, explain why it matters, propose a fix. " +
				"Say what is good too, briefly.",
		},
	}
}

// CheckRoster validates a roster: at least one role, at most max, valid
// unique names, and a description for each.
func CheckRoster(roster []Role, max int) error {
	if len(roster) == 0 {
		return fmt.Errorf("a team needs at least one role")
	}
	if max > 0 && len(roster) > max {
		return fmt.Errorf("a team may have at most %d roles, got %d", max, len(roster))
	}
	seen := make(map[string]bool, len(roster))
	for _, r := range roster {
		switch {
		case !ValidRoleName(r.Name):
			return fmt.Errorf("role name %q must be a lowercase slug (a-z, 0-9, - or _), starting with a letter, at most 32 characters", r.Name)
		case seen[r.Name]:
			return fmt.Errorf("role %q appears twice", r.Name)
		case strings.TrimSpace(r.Description) == "":
			return fmt.Errorf("role %q needs a description", r.Name)
		}
		seen[r.Name] = true
	}
	return nil
}

// RoleNames lists the roster's names in order.
func RoleNames(roster []Role) []string {
	names := make([]string, len(roster))
	for i, r := range roster {
		names[i] = r.Name
	}
	return names
}
