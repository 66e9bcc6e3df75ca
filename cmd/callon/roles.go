package main

import (
	"context"
	"fmt"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/master"
)

// rolesConfig is the configuration in master's terms: the operator's
// policy and the roles file's rosters, checked against it, tools lists
// against tools. Its error names the file, the guild and channel, and
// the role.
func rolesConfig(cfg config.Config, tools master.ToolCatalog) (map[master.RoleScope][]master.Role, master.RolePolicy, error) {
	policy := master.RolePolicy{
		DefaultModel: cfg.WorkerModel,
		Models:       cfg.Models,
		MaxPrompt:    cfg.Limits.MaxPrompt,
		MaxRoles:     cfg.Limits.MaxWorkers,
		Tools:        tools,
	}
	var file map[master.RoleScope][]master.Role
	if len(cfg.Roles) > 0 {
		file = make(map[master.RoleScope][]master.Role, len(cfg.Roles))
		for _, r := range cfg.Roles {
			file[master.RoleScope{GuildID: r.GuildID, ChannelID: r.ChannelID}] = fileRoles(r.Roles)
		}
	}
	if err := policy.CheckFile(file); err != nil {
		return nil, policy, fmt.Errorf("invalid configuration:\nCALLON_ROLES_FILE: %s: %w", cfg.RolesFile, err)
	}
	return file, policy, nil
}

func fileRoles(in []config.Role) []master.Role {
	out := make([]master.Role, len(in))
	for i, r := range in {
		out[i] = master.Role{
			Name: r.Name, Description: r.Description, Prompt: r.Prompt, Model: r.Model,
			Temperature: r.Temperature, MaxTokens: r.MaxTokens, Timeout: r.Timeout, Tools: r.Tools, Avatar: r.Avatar,
		}
	}
	return out
}

// rolePolicyProblems checks every role of the roles file against the
// operator's policy (names, lengths, models, the size of each roster), as
// rolesConfig does at start, and returns every problem at its line, to
// be reported with the file's own (config.Config.Validate).
func rolePolicyProblems(cfg config.Config) []config.Problem {
	policy := master.RolePolicy{
		DefaultModel: cfg.WorkerModel,
		Models:       cfg.Models,
		MaxPrompt:    cfg.Limits.MaxPrompt,
		MaxRoles:     cfg.Limits.MaxWorkers,
		Tools:        checkedByConfig{},
	}
	var out []config.Problem
	for _, r := range cfg.Roles {
		where := scopeName(r)
		if policy.MaxRoles > 0 && len(r.Roles) > policy.MaxRoles {
			out = append(out, config.Problem{Line: r.Line, Text: fmt.Sprintf("%s: %d roles; a team may have at most %d (CALLON_MAX_ROLES)",
				where, len(r.Roles), policy.MaxRoles)})
		}
		seen := map[string]int{}
		for i, role := range fileRoles(r.Roles) {
			line := r.Roles[i].Line
			if first, dup := seen[role.Name]; dup {
				out = append(out, config.Problem{Line: line, Text: fmt.Sprintf("%s: role %q appears twice (first at line %d)", where, role.Name, first)})
			}
			seen[role.Name] = line
			for _, err := range roleProblems(policy, role) {
				out = append(out, config.Problem{Line: line, Text: fmt.Sprintf("%s: role %q: %v", where, role.Name, err)})
			}
		}
	}
	return out
}

// scopeName names a roster of the roles file as its errors do.
func scopeName(r config.Roster) string {
	switch {
	case r.GuildID == "":
		return "default roles"
	case r.ChannelID == "":
		return "guild " + r.GuildID
	}
	return "guild " + r.GuildID + ", channel " + r.ChannelID
}

// checkedByConfig accepts every tools entry: config checked the roles
// file's entries against its mcp_servers already, and whether a server
// lists a tool is known only once it runs (checkToolsAtStart).
type checkedByConfig struct{}

func (checkedByConfig) Check(string, []string) error           { return nil }
func (checkedByConfig) Names(context.Context, string) []string { return nil }

// roleProblems is every problem the policy finds with a role, not only
// the first that CheckRole reports: each field is checked on its own, in
// a role whose other fields are fine.
func roleProblems(policy master.RolePolicy, r master.Role) []error {
	if policy.CheckRole(r) == nil {
		return nil
	}
	fine := master.Role{Name: "r", Description: "d", Prompt: "p"}
	var out []error
	for _, set := range []func(*master.Role){
		func(x *master.Role) { x.Name = r.Name },
		func(x *master.Role) { x.Description = r.Description },
		func(x *master.Role) { x.Prompt = r.Prompt },
		func(x *master.Role) { x.Model = r.Model },
		func(x *master.Role) { x.Temperature = r.Temperature },
		func(x *master.Role) { x.MaxTokens = r.MaxTokens },
		func(x *master.Role) { x.Timeout = r.Timeout },
		func(x *master.Role) { x.Tools = r.Tools },
	} {
		one := fine
		set(&one)
		if err := policy.CheckRole(one); err != nil {
			out = append(out, err)
		}
	}
	if len(out) == 0 { // a problem of the fields together
		out = append(out, policy.CheckRole(r))
	}
	return out
}

// roleNames are the names of the roles the operator configured: the
// built-in ones and the roles file's (the role label of the metrics).
func roleNames(file map[master.RoleScope][]master.Role) []string {
	var names []string
	for _, r := range master.DefaultRoles() {
		names = append(names, r.Name)
	}
	for _, roles := range file {
		for _, r := range roles {
			names = append(names, r.Name)
		}
	}
	return names
}

// fileFeatures are the roles file's features in master's terms, by scope.
func fileFeatures(in []config.Features) map[master.RoleScope]master.FeatureSettings {
	out := make(map[master.RoleScope]master.FeatureSettings, len(in))
	for _, f := range in {
		s := master.FeatureSettings{Personas: f.Personas, Memory: f.Memory}
		if m, ok := master.ParseReviewMode(f.Review); ok {
			s.Review = &m
		}
		out[master.RoleScope{GuildID: f.GuildID, ChannelID: f.ChannelID}] = s
	}
	return out
}
