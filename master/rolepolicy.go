package master

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Bounds of a role's definition that the operator does not configure.
const (
	// MaxDescriptionLen bounds a role's one-line description.
	MaxDescriptionLen = 200
	// DefaultMaxPrompt bounds a role's prompt when the policy sets none.
	DefaultMaxPrompt = 4000
	// MaxRoleTokens bounds a role's max output tokens.
	MaxRoleTokens = 200_000
	// MinRoleTimeout and MaxRoleTimeout bound a role's time on one task.
	MinRoleTimeout = 10 * time.Second
	MaxRoleTimeout = 24 * time.Hour
)

// roleErrorf is a problem with roles that the person who caused it can
// fix: an *Error with code EInvalid, its message a lowercase fragment.
func roleErrorf(format string, args ...any) error {
	return Errorf(EInvalid, format, args...)
}

// RolePolicy is the operator's limits on the roles admins and the roles
// file may define.
type RolePolicy struct {
	// DefaultModel is the model of roles that name none (the worker
	// model); it is always allowed.
	DefaultModel string
	// Models a role may name besides DefaultModel.
	Models []string
	// MaxPrompt bounds a prompt, in characters; 0 means DefaultMaxPrompt.
	MaxPrompt int
	// MaxRoles bounds a roster; 0 means no bound.
	MaxRoles int
	// Tools checks and lists what a role's tools list may name; nil
	// allows fetch_url only.
	Tools ToolCatalog
}

// ToolCatalog is the tools roles may be given: fetch_url and the tools
// of the MCP servers the deployment configures.
type ToolCatalog interface {
	// Check reports the entries of a tools list that name neither
	// fetch_url nor a tool of a configured MCP server granted to guild
	// ("": the operator's, every server).
	Check(guild string, tools []string) error
	// Names lists what a tools list of a role of guild may hold, for
	// autocomplete: fetch_url, each granted server's "<server>.*" and the
	// tools of those that answer within ctx.
	Names(ctx context.Context, guild string) []string
}

// Toolbox runs the tools roles may use: fetch_url and the tools of the
// deployment's MCP servers (tools.Manager implements it, as it does
// ToolCatalog). Every method that names a guild gives a role of that
// guild only what the operator granted it.
type Toolbox interface {
	// Offer returns the functions a role of guild with the tools list
	// allowed may call now, each server's tool as "<server>__<tool>", and
	// a notice for the model naming those that are unavailable ("" when
	// none is).
	Offer(ctx context.Context, guild string, allowed []string) (tools []Tool, notice string)
	// Allows says whether the tools list allowed lets a model of a role
	// of guild call name: a model may call a function it was not offered.
	Allows(guild string, allowed []string, name string) bool
	// NeedsApproval says whether a call of name with args, by a role with
	// the tools list allowed, waits for a person.
	NeedsApproval(allowed []string, name, args string) bool
	// Approvers are the role ids whose members alone decide on a call of
	// name; none: the team's owner and thread managers.
	Approvers(name string) []string
	// Call makes one call for a role of guild within its own timeout and
	// output cap; every failure is a result the model can read.
	Call(ctx context.Context, guild, name, args string) ToolResult
}

// MaxRoleTools bounds a role's tools list.
const MaxRoleTools = 32

// fetchURL is the built-in tool every deployment has.
const fetchURL = "fetch_url"

// checkTools reports the first problem with a role's tools list, for a
// role of guild ("": the operator's).
func (p RolePolicy) checkTools(guild string, tools []string) error {
	if len(tools) > MaxRoleTools {
		return roleErrorf("%d tools; a role may list at most %d (a server's tools can be listed at once as server.*)", len(tools), MaxRoleTools)
	}
	if p.Tools == nil {
		for _, t := range tools {
			if t != fetchURL {
				return roleErrorf("tools: %q: no MCP server is configured; only %s can be used", t, fetchURL)
			}
		}
		return nil
	}
	if err := p.Tools.Check(guild, tools); err != nil {
		return roleErrorf("%s", err.Error())
	}
	return nil
}

// ParseToolList reads a tools list typed as one line: entries separated
// by commas or spaces, duplicates dropped.
func ParseToolList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// ModelAllowed reports whether a role may name model.
func (p RolePolicy) ModelAllowed(model string) bool {
	return model == "" || model == p.DefaultModel || slices.Contains(p.Models, model)
}

// AllowedModels lists the models a role may name, the default first.
func (p RolePolicy) AllowedModels() []string {
	var out []string
	for _, m := range append([]string{p.DefaultModel}, p.Models...) {
		if m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// ModelOf is the model a role runs on: its own if allowed, else the
// default.
func (p RolePolicy) ModelOf(r Role) string {
	if r.Model == "" || !p.ModelAllowed(r.Model) {
		return p.DefaultModel
	}
	return r.Model
}

// MaxPromptLen is the most characters a role's prompt may have.
func (p RolePolicy) MaxPromptLen() int { return p.maxPrompt() }

func (p RolePolicy) maxPrompt() int {
	if p.MaxPrompt > 0 {
		return p.MaxPrompt
	}
	return DefaultMaxPrompt
}

// CheckRole reports the first problem with one role's definition, as a
// *RoleError, for a role the operator defines (the roles file).
func (p RolePolicy) CheckRole(r Role) error { return p.CheckRoleIn("", r) }

// CheckRoleIn is CheckRole for a role of guild: its tools must be among
// what the operator granted the guild.
func (p RolePolicy) CheckRoleIn(guild string, r Role) error {
	desc := strings.TrimSpace(r.Description)
	prompt := strings.TrimSpace(r.Prompt)
	switch {
	case !ValidRoleName(r.Name):
		return roleErrorf("the name %q is not a lowercase slug: use a-z, 0-9, - and _, start with a letter, at most 32 characters (for example `market-analyst`)", r.Name)
	case desc == "":
		return roleErrorf("the description is empty: give one line saying what the role is for, which the coordinator routes by")
	case strings.ContainsAny(desc, "\r\n"):
		return roleErrorf("the description must be one line")
	case utf8.RuneCountInString(desc) > MaxDescriptionLen:
		return roleErrorf("the description is %d characters long; the limit is %d", utf8.RuneCountInString(desc), MaxDescriptionLen)
	case prompt == "":
		return roleErrorf("the prompt is empty: say how the role should work")
	case utf8.RuneCountInString(prompt) > p.maxPrompt():
		return roleErrorf("the prompt is %d characters long; the limit is %d", utf8.RuneCountInString(prompt), p.maxPrompt())
	case !p.ModelAllowed(r.Model):
		return roleErrorf("the model %q is not allowed; use one of: %s", r.Model, strings.Join(p.AllowedModels(), ", "))
	case r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 2):
		return roleErrorf("the temperature %g is out of range: use 0 to 2", *r.Temperature)
	case r.MaxTokens < 0 || r.MaxTokens > MaxRoleTokens:
		return roleErrorf("max tokens %d is out of range: use 1 to %d", r.MaxTokens, MaxRoleTokens)
	case r.Timeout != 0 && (r.Timeout < MinRoleTimeout || r.Timeout > MaxRoleTimeout):
		return roleErrorf("the timeout %s is out of range: use %s to %s", r.Timeout, MinRoleTimeout, MaxRoleTimeout)
	}
	return p.checkTools(guild, r.Tools)
}

// CheckRoster reports the first problem with a whole roster: too many
// roles, a name used twice, or a role CheckRole refuses, naming the role.
func (p RolePolicy) CheckRoster(roster []Role) error {
	if len(roster) == 0 {
		return roleErrorf("no roles: a roster needs at least one")
	}
	if p.MaxRoles > 0 && len(roster) > p.MaxRoles {
		return roleErrorf("%d roles; a team may have at most %d", len(roster), p.MaxRoles)
	}
	seen := make(map[string]bool, len(roster))
	for _, r := range roster {
		if seen[r.Name] {
			return roleErrorf("role %q appears twice", r.Name)
		}
		seen[r.Name] = true
		if err := p.CheckRole(r); err != nil {
			return fmt.Errorf("role %q: %w", r.Name, err)
		}
	}
	return nil
}

// normalizeRole trims what people type around a role's fields.
func normalizeRole(r Role) Role {
	r.Name = strings.ToLower(strings.TrimSpace(r.Name))
	r.Description = strings.TrimSpace(r.Description)
	r.Prompt = strings.TrimSpace(r.Prompt)
	r.Model = strings.TrimSpace(r.Model)
	r.Tools = ParseToolList(strings.Join(r.Tools, ","))
	return r
}
