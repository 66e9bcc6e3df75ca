package tools

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/callonbot/callon/tools/fetch"
)

// What each guild may use, who decides on a call, and the lethal
// combination. The operator grants each MCP server to guilds
// (Server.Guilds) and private hosts of fetch_url to guilds
// (Options.GuildFetchAllow): a role in a guild is offered, allowed and
// runs only what its guild was granted, however its tools list was
// written. Guild "" is the operator's own (the roles file's checks, the
// terminal): every grant holds there.

// granted reports whether guild may use server s.
func (s *server) granted(guild string) bool {
	return guild == "" || s.spec.Guilds == nil || slices.Contains(s.spec.Guilds, guild)
}

// Granted reports whether guild may use the MCP server named server.
func (m *Manager) Granted(guild, server string) bool {
	s := m.servers[server]
	return s != nil && s.granted(guild)
}

// fetcherFor is the fetcher of a guild: CALLON_FETCH_ALLOW and the private
// hosts granted to the guild. A fetcher of its own keeps the connections
// to a guild's private hosts out of every other guild's reach (a pooled
// connection is not checked again).
func (m *Manager) fetcherFor(guild string) *fetch.Fetcher {
	if f := m.guildFetchers[guild]; f != nil {
		return f
	}
	return m.fetcher
}

// marked reports whether the entry tool of server s (or "*": any of its
// tools) carries the mark all/tools.
func marked(all bool, tools []string, tool string) bool {
	return all || (tool == "*" && len(tools) > 0) || slices.Contains(tools, tool)
}

// readsPrivate reports whether a role with the tools list allowed holds a
// tool that reads private data.
func (m *Manager) readsPrivate(allowed []string) bool {
	for _, a := range allowed {
		srv, tool, ok := strings.Cut(strings.TrimSpace(a), ".")
		if s := m.servers[srv]; ok && s != nil && marked(s.spec.PrivateAll, s.spec.PrivateTools, tool) {
			return true
		}
	}
	return false
}

// outbound reports whether a call of name with args sends data out where
// the operator has not said it may go without a person: fetch_url to a
// host off Options.OutboundAllow (or to a URL that cannot be read), or a
// tool marked as sending data out.
func (m *Manager) outbound(name string, args json.RawMessage) bool {
	if name == FetchURL {
		var a struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return true
		}
		u, err := url.Parse(strings.TrimSpace(a.URL))
		return err != nil || u.Hostname() == "" || !m.outboundAllow.Contains(u.Hostname())
	}
	srv, tool, ok := strings.Cut(name, Separator)
	s := m.servers[srv]
	return ok && s != nil && marked(s.spec.OutboundAll, s.spec.OutboundTools, tool)
}

// NeedsApproval says whether a call of the tool named name (as the model
// calls it), by a role with the tools list allowed, with args, needs a
// person's approval first: its server's approval setting says so, or it is the
// lethal combination — the role reads private data (a tool marked
// reads_private) and the call sends data out (fetch_url to a host off
// outbound_allow, or a tool marked sends_out), so a steered model could
// send what it read anywhere.
func (m *Manager) NeedsApproval(allowed []string, name, args string) bool {
	if srv, tool, ok := strings.Cut(name, Separator); ok {
		if s := m.servers[srv]; s != nil && (s.spec.ApproveAll || slices.Contains(s.spec.ApproveTools, tool)) {
			return true
		}
	}
	return m.outbound(name, json.RawMessage(args)) && m.readsPrivate(allowed)
}

// Approvers are the role ids whose members alone may decide on a
// call of the tool named name (its server's approvers); none means the
// team's owner and members who can manage threads may.
func (m *Manager) Approvers(name string) []string {
	srv, _, ok := strings.Cut(name, Separator)
	if s := m.servers[srv]; ok && s != nil {
		return s.spec.Approvers
	}
	return nil
}

// notGranted is what a tools list entry naming a server not granted to
// its guild is told.
func notGranted(entry, server string) error {
	return fmt.Errorf("tools: %q: the MCP server %q is not available in this Discord server (its operator grants it to servers by id)", entry, server)
}
