package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/tools"
	"github.com/callonbot/callon/tools/fetch"
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
