package config

import (
	"fmt"
	"net/netip"
	"strings"

	"go.yaml.in/yaml/v3"
)

// What the operator grants to which guilds, and what marks a tool as
// reading private data or sending data out (the roles file's
// mcp_servers.<name>.guilds, approvers, reads_private and sends_out,
// guilds.<id>.fetch_allow, and outbound_allow).

// GuildGrant is the guilds an MCP server is granted to: every guild when
// All, else those listed.
type GuildGrant struct {
	All    bool
	Guilds []string
	// Implicit says the roles file named no guilds: the guild of
	// DISCORD_GUILD_ID when it is set (bindImplicitGrants), else none (the
	// bot refuses to start; the terminal, the operator's, may use it).
	Implicit bool
}

// Allows reports whether guild may use what the grant is on.
func (g GuildGrant) Allows(guild string) bool {
	if g.All {
		return true
	}
	for _, id := range g.Guilds {
		if id == guild {
			return true
		}
	}
	return false
}

// ToolMark names tools of a server: all of them, or those listed.
type ToolMark struct {
	All   bool
	Tools []string
}

// guildsYAML is `all` or a list of guild ids.
type guildsYAML struct {
	set    bool
	all    bool
	guilds []string
}

func (g *guildsYAML) UnmarshalYAML(n *yaml.Node) error {
	g.set = true
	switch {
	case n.Kind == yaml.ScalarNode && n.Value == "all":
		g.all = true
		return nil
	case n.Kind == yaml.SequenceNode:
		if err := n.Decode(&g.guilds); err != nil {
			return err
		}
		for _, id := range g.guilds {
			if !isSnowflake(id) {
				return fmt.Errorf("line %d: guilds: %q is not a numeric Discord id (quote ids: \"123…\")", n.Line, id)
			}
		}
		return nil
	}
	return fmt.Errorf("line %d: guilds: want `all` or a list of Discord server (guild) ids", n.Line)
}

// markYAML is `true` (every tool of the server), `false` (none) or a
// list of tool names.
type markYAML struct {
	set   bool
	all   bool
	tools []string
}

func (m *markYAML) UnmarshalYAML(n *yaml.Node) error {
	m.set = true
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return nil
	case n.Kind == yaml.ScalarNode && n.Tag == "!!bool":
		return n.Decode(&m.all)
	case n.Kind == yaml.SequenceNode:
		return n.Decode(&m.tools)
	}
	return fmt.Errorf("line %d: want true (every tool of the server), false (none) or a list of tool names", n.Line)
}

// idsYAML is one Discord id or a list of them.
type idsYAML []string

func (ids *idsYAML) UnmarshalYAML(n *yaml.Node) error {
	var list []string
	switch n.Kind {
	case yaml.ScalarNode:
		list = []string{n.Value}
	case yaml.SequenceNode:
		if err := n.Decode(&list); err != nil {
			return err
		}
	default:
		return fmt.Errorf("line %d: want a Discord role id or a list of them", n.Line)
	}
	for _, id := range list {
		if !isSnowflake(id) {
			return fmt.Errorf("line %d: %q is not a numeric Discord role id (quote ids: \"123…\")", n.Line, id)
		}
	}
	*ids = list
	return nil
}

// grants fills a server's grant, approvers and marks from its entry.
func (y mcpServerYAML) grants(s *MCPServer) error {
	s.Guilds = GuildGrant{All: y.Guilds.all, Guilds: y.Guilds.guilds, Implicit: !y.Guilds.set}
	s.Approvers = y.Approvers
	// A server is presumed to read private data (it runs on the host, or
	// behind the operator's credentials) unless the roles file says which
	// of its tools do, or that none does.
	private := y.ReadsPrivate
	if !private.set {
		private.all = true
	}
	for _, m := range []struct {
		name string
		in   markYAML
		out  *ToolMark
	}{{"reads_private", private, &s.ReadsPrivate}, {"sends_out", y.SendsOut, &s.SendsOut}} {
		m.out.All = m.in.all
		for _, t := range m.in.tools {
			t = strings.TrimSpace(t)
			if !mcpToolName.MatchString(t) {
				return fmt.Errorf("%s: %q is not a tool name", m.name, t)
			}
			m.out.Tools = append(m.out.Tools, t)
		}
	}
	return nil
}

// checkHosts checks a list of hosts as CALLON_FETCH_ALLOW takes them: host
// names (or *.domain), addresses and CIDRs; it returns them normalized.
func checkHosts(list []string) ([]string, error) {
	var out []string
	for _, e := range list {
		e = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(e), "."))
		if e == "" {
			continue
		}
		_, perr := netip.ParsePrefix(e)
		_, aerr := netip.ParseAddr(strings.Trim(e, "[]"))
		if perr != nil && aerr != nil && !hostPattern.MatchString(e) {
			return nil, fmt.Errorf("%q is not a host name (or *.domain), an address or a CIDR such as 10.0.0.0/8", e)
		}
		out = append(out, e)
	}
	return out, nil
}

// bindImplicitGrants gives the MCP servers that name no guilds to the
// one guild of DISCORD_GUILD_ID, when it is set: a bot for one server
// needs no guilds: key. Without it such a server is granted to no guild
// (only the operator's terminal uses it) and the bot refuses to start
// (implicitGrants): a tool of the host must never become the tool of
// every server that invites the bot.
func bindImplicitGrants(servers []MCPServer, guild string) {
	if guild == "" {
		return
	}
	for i := range servers {
		if servers[i].Guilds.Implicit {
			servers[i].Guilds = GuildGrant{Guilds: []string{guild}}
		}
	}
}

// implicitGrants is the error of a bot whose roles file has MCP servers
// that name no guilds, when no DISCORD_GUILD_ID says which one they are for.
func implicitGrants(servers []MCPServer) error {
	var names []string
	for _, s := range servers {
		if s.Guilds.Implicit {
			names = append(names, s.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return fieldError("CALLON_ROLES_FILE", fmt.Sprintf("mcp_servers %s name no guilds: say which Discord servers may give their tools to roles, "+
		"guilds: [\"<server id>\", …] (or guilds: all, for every server that invites the bot); "+
		"with DISCORD_GUILD_ID set, a server that names none is that guild's", strings.Join(names, ", ")))
}
