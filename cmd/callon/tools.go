package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/tools"
	"github.com/callonbot/callon/tools/fetch"
	"github.com/callonbot/callon/workers"
)

// newTools returns the manager of the roles file's MCP servers and of
// fetch_url; no server starts before one of its tools is asked for.
func newTools(cfg config.Config, log *slog.Logger) (*tools.Manager, error) {
	servers := make([]tools.Server, len(cfg.MCPServers))
	for i, s := range cfg.MCPServers {
		servers[i] = tools.Server{
			Name: s.Name, Command: s.Command, Env: s.Env, URL: s.URL, Headers: s.Headers,
			ApproveAll: s.Approval.All, ApproveTools: s.Approval.Tools, Approvers: s.Approvers,
			PrivateAll: s.ReadsPrivate.All, PrivateTools: s.ReadsPrivate.Tools,
			OutboundAll: s.SendsOut.All, OutboundTools: s.SendsOut.Tools,
		}
		if !s.Guilds.All {
			// None listed (or guilds: left out without DISCORD_GUILD_ID):
			// no guild; the operator's terminal ("") may still use it.
			servers[i].Guilds = append([]string{}, s.Guilds.Guilds...)
		}
	}
	m, err := tools.New(servers, log, tools.Options{BaseEnv: cfg.Tools.Env, Fetch: fetch.Options{Allow: cfg.Tools.FetchAllow},
		GuildFetchAllow: cfg.GuildFetchAllow, OutboundAllow: cfg.OutboundAllow})
	if err != nil {
		return nil, fmt.Errorf("invalid configuration:\nCALLON_FETCH_ALLOW or mcp_servers: %w", err)
	}
	return m, nil
}

// closeTools stops the MCP servers, killing those that take too long.
func closeTools(m *tools.Manager, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.Close(ctx); err != nil {
		log.Warn("stop MCP servers", "err", err)
	}
}

// toolbox is the tools manager as the worker pool uses it. The terminal's
// (operator) toolbox gives its roles every grant: it is the operator's own.
type toolbox struct {
	m        *tools.Manager
	log      *slog.Logger
	operator bool
}

// guild is the guild whose grants apply: "" (every grant) for the
// operator's terminal.
func (t toolbox) guild(g string) string {
	if t.operator {
		return ""
	}
	return g
}

var _ workers.Toolbox = toolbox{}

// Offer offers the entries of the list that name a configured tool; an
// entry that does not (a server since removed from the roles file) is
// logged, not offered.
func (t toolbox) Offer(ctx context.Context, guild string, allowed []string) ([]master.Tool, string) {
	var ok []string
	for _, a := range allowed {
		if err := t.m.Check(t.guild(guild), []string{a}); err != nil {
			t.log.Warn("a role lists a tool that is not configured or not granted to its guild", "guild_id", guild, "err", err)
			continue
		}
		ok = append(ok, a)
	}
	o, err := t.m.Tools(ctx, t.guild(guild), ok)
	if err != nil {
		return nil, "Your tools could not be loaded: " + err.Error()
	}
	if len(o.Missing) > 0 {
		t.log.Debug("a role lists tools its server does not have", "missing", o.Missing)
	}
	return o.Tools, o.Notice()
}

// Allows lets a role call a tool its list names, of a server granted to
// its guild.
func (t toolbox) Allows(guild string, allowed []string, name string) bool {
	srv, _, mcp := strings.Cut(name, tools.Separator)
	return tools.Allows(allowed, name) && (!mcp || t.m.Granted(t.guild(guild), srv))
}

// Approvers are the server's, but none in the terminal: there the
// operator, who named them, decides.
func (t toolbox) Approvers(name string) []string {
	if t.operator {
		return nil
	}
	return t.m.Approvers(name)
}

func (t toolbox) NeedsApproval(allowed []string, name, args string) bool {
	return t.m.Approval(allowed, name, json.RawMessage(args))
}

func (t toolbox) Call(ctx context.Context, guild, name, args string) master.ToolResult {
	r := t.m.Call(ctx, t.guild(guild), name, json.RawMessage(args))
	return master.ToolResult{Text: r.Text, IsError: r.IsError, Duration: r.Duration, Size: r.Size}
}

// catalog is the tools manager as /roles set checks and completes a
// role's tools list.
type catalog struct {
	m       *tools.Manager
	servers []config.MCPServer
}

var _ master.ToolCatalog = catalog{}

func (c catalog) Check(guild string, list []string) error { return c.m.Check(guild, list) }

// namesWait bounds how long listing the servers' tools may take, within
// an autocomplete's three seconds; a server that takes longer (starting
// for the first time) is listed as "<server>.*" only, and its tools
// next time.
const namesWait = 1500 * time.Millisecond

func (c catalog) Names(ctx context.Context, guild string) []string {
	ctx, cancel := context.WithTimeout(ctx, namesWait)
	defer cancel()
	lists := make([][]string, len(c.servers))
	var wg sync.WaitGroup
	for i, s := range c.servers {
		if !c.m.Granted(guild, s.Name) {
			continue
		}
		wg.Go(func() {
			lists[i] = []string{s.Name + ".*"}
			if o, err := c.m.Tools(ctx, guild, []string{s.Name + ".*"}); err == nil {
				for _, t := range o.Tools {
					lists[i] = append(lists[i], strings.Replace(t.Name, tools.Separator, ".", 1))
				}
			}
		})
	}
	wg.Wait()
	names := []string{tools.FetchURL}
	for _, l := range lists {
		names = append(names, l...)
	}
	return names
}
