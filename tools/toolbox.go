package tools

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/callonbot/callon/master"
)

// The Manager is the worker pool's toolbox and /roles set's catalog, as
// the core declares them.
var (
	_ master.Toolbox     = (*Manager)(nil)
	_ master.ToolCatalog = (*Manager)(nil)
	_ master.Toolbox     = operator{}
)

// Offer offers the entries of the list that name a tool configured and
// granted to guild; an entry that does not (a server since removed from
// the roles file, or no longer granted) is logged, not offered.
func (m *Manager) Offer(ctx context.Context, guild string, allowed []string) ([]master.Tool, string) {
	var ok []string
	for _, a := range allowed {
		if err := m.Check(guild, []string{a}); err != nil {
			m.log.Warn("a role lists a tool that is not configured or not granted to its guild", "guild_id", guild, "err", err)
			continue
		}
		ok = append(ok, a)
	}
	o, err := m.Tools(ctx, guild, ok)
	if err != nil {
		return nil, "Your tools could not be loaded: " + err.Error()
	}
	if len(o.Missing) > 0 {
		m.log.Debug("a role lists tools its server does not have", "missing", o.Missing)
	}
	return o.Tools, o.Notice()
}

// Allows lets a role of guild call a tool its list names (see the
// package's Allows), of a server granted to its guild.
func (m *Manager) Allows(guild string, allowed []string, name string) bool {
	srv, _, mcp := strings.Cut(name, Separator)
	return Allows(allowed, name) && (!mcp || m.Granted(guild, srv))
}

// namesWait bounds how long listing the servers' tools may take, within
// an autocomplete's three seconds; a server that takes longer (starting
// for the first time) is listed as "<server>.*" only, and its tools
// next time.
const namesWait = 1500 * time.Millisecond

// Names lists what a tools list of a role of guild may hold, for /roles
// set's autocomplete: fetch_url, then each server granted to guild, in
// the roles file's order, as "<server>.*" and its tools.
func (m *Manager) Names(ctx context.Context, guild string) []string {
	ctx, cancel := context.WithTimeout(ctx, namesWait)
	defer cancel()
	lists := make([][]string, len(m.order))
	var wg sync.WaitGroup
	for i, name := range m.order {
		if !m.Granted(guild, name) {
			continue
		}
		wg.Go(func() {
			lists[i] = []string{name + ".*"}
			if o, err := m.Tools(ctx, guild, []string{name + ".*"}); err == nil {
				for _, t := range o.Tools {
					lists[i] = append(lists[i], strings.Replace(t.Name, Separator, ".", 1))
				}
			}
		})
	}
	wg.Wait()
	names := []string{FetchURL}
	for _, l := range lists {
		names = append(names, l...)
	}
	return names
}

// Operator is the toolbox of the operator's own terminal (callon chat):
// its roles may use every MCP server, whatever guild their team names,
// and fetch the private hosts of CALLON_FETCH_ALLOW (a server's own
// fetch_allow hosts stay that server's); the operator, who named the
// servers' approvers, decides every approval.
func (m *Manager) Operator() master.Toolbox { return operator{m} }

// operator is the Manager with every server's grant and no approvers.
type operator struct{ m *Manager }

func (o operator) Offer(ctx context.Context, _ string, allowed []string) ([]master.Tool, string) {
	return o.m.Offer(ctx, "", allowed)
}

func (o operator) Allows(_ string, allowed []string, name string) bool {
	return o.m.Allows("", allowed, name)
}

func (o operator) NeedsApproval(allowed []string, name, args string) bool {
	return o.m.NeedsApproval(allowed, name, args)
}

func (operator) Approvers(string) []string { return nil }

func (o operator) Call(ctx context.Context, _, name, args string) master.ToolResult {
	return o.m.Call(ctx, "", name, args)
}
