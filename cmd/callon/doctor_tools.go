package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/tools"
)

// toolCheck is what starting the MCP servers found: a line per server,
// and a line per tool a role of the roles file names that its server
// does not list.
type toolCheck struct {
	servers []finding // statusFail for a server that could not be started
	unknown []finding
}

// checkRoleTools starts the MCP servers (every declared one with all,
// else those a role of the roles file names), lists their tools, and
// checks every "<server>.<tool>" of the roles file's roles against them.
// A server that cannot be started leaves its roles' tools unchecked.
func checkRoleTools(ctx context.Context, m *tools.Manager, cfg config.Config, all bool) toolCheck {
	var names []string
	for _, s := range cfg.MCPServers {
		if all {
			names = append(names, s.Name)
		}
	}
	for _, r := range cfg.Roles {
		for _, role := range r.Roles {
			for _, t := range role.Tools {
				if srv, _, ok := strings.Cut(t, "."); ok && !slices.Contains(names, srv) {
					names = append(names, srv)
				}
			}
		}
	}
	var c toolCheck
	if len(names) == 0 {
		return c
	}
	entries := make([]string, len(names))
	for i, n := range names {
		entries[i] = n + ".*"
	}
	offer, err := m.Tools(ctx, "", entries) // the operator's view: every server
	if err != nil {
		c.servers = append(c.servers, fail("MCP servers", err.Error(), ""))
		return c
	}
	listed := map[string][]string{}
	for _, t := range offer.Tools {
		srv, tool, _ := strings.Cut(t.Name, tools.Separator)
		listed[srv] = append(listed[srv], tool)
	}
	down := map[string]bool{}
	for _, u := range offer.Unavailable {
		down[u.Server] = true
		c.servers = append(c.servers, fail("MCP server "+u.Server, "cannot be started: "+u.Reason,
			"check its command or url under mcp_servers in the roles file"))
	}
	for _, n := range names {
		if !down[n] {
			c.servers = append(c.servers, ok("MCP server "+n, "started; it lists %s", plural(len(listed[n]), "tool")))
		}
	}
	for _, r := range cfg.Roles {
		for _, role := range r.Roles {
			for _, t := range role.Tools {
				srv, tool, ok := strings.Cut(t, ".")
				if !ok || tool == "*" || down[srv] || slices.Contains(listed[srv], tool) {
					continue
				}
				c.unknown = append(c.unknown, fail("roles file", fmt.Sprintf("%s: tools: %q: the MCP server %s lists no tool %q",
					roleWhere(r, role), t, srv, tool), "name one it lists: "+strings.Join(listed[srv], ", ")))
			}
		}
	}
	return c
}

// roleWhere names a role of the roles file as its errors do: its line,
// its scope and its name.
func roleWhere(r config.Roster, role config.Role) string {
	where := fmt.Sprintf("role %q", role.Name)
	switch {
	case r.ChannelID != "":
		where = "guild " + r.GuildID + ", channel " + r.ChannelID + ": " + where
	case r.GuildID != "":
		where = "guild " + r.GuildID + ": " + where
	}
	if role.Line > 0 {
		where = fmt.Sprintf("line %d: %s", role.Line, where)
	}
	return where
}

// checkTools is callon doctor's check of the tools: every MCP server
// starts, and every tool a role names exists.
func checkTools(ctx context.Context, cfg config.Config) []finding {
	if len(cfg.MCPServers) == 0 {
		return []finding{ok("tools", "no MCP server is configured (roles may use fetch_url)")}
	}
	m, err := newTools(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return []finding{fail("tools", err.Error(), "")}
	}
	defer closeTools(m, slog.New(slog.DiscardHandler))
	c := checkRoleTools(ctx, m, cfg, true)
	return append(c.servers, c.unknown...)
}

// startToolsWait bounds the tools check at start: a server that takes
// longer is named as not checked, and callon starts anyway.
const startToolsWait = 20 * time.Second

// checkToolsAtStart starts the MCP servers the roles file's roles name
// and refuses to start on a tool a server does not list; a server that
// cannot be started (or reached) is only a warning, since it may come
// back.
func checkToolsAtStart(ctx context.Context, m *tools.Manager, cfg config.Config) ([]finding, error) {
	ctx, cancel := context.WithTimeout(ctx, startToolsWait)
	defer cancel()
	c := checkRoleTools(ctx, m, cfg, false)
	for i, f := range c.servers {
		if f.status == statusFail {
			c.servers[i].status = statusWarn
			c.servers[i].text += "; the tools of its roles are not checked, and it is tried again when a role needs it"
		}
	}
	if len(c.unknown) == 0 {
		return c.servers, nil
	}
	var b strings.Builder
	b.WriteString("invalid configuration:")
	for _, f := range c.unknown {
		fmt.Fprintf(&b, "\nCALLON_ROLES_FILE: %s: %s (it lists: %s)", cfg.RolesFile, f.text, strings.TrimPrefix(f.fix, "name one it lists: "))
	}
	return c.servers, errors.New(b.String())
}
