package main

import (
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
			Temperature: r.Temperature, MaxTokens: r.MaxTokens, Timeout: r.Timeout, Tools: r.Tools,
		}
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
