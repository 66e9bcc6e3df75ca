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
			ApproveAll: s.Approval.All, ApproveTools: s.Approval.Tools,
		}
	}
	m, err := tools.New(servers, log, tools.Options{BaseEnv: cfg.Tools.Env, Fetch: fetch.Options{Allow: cfg.Tools.FetchAllow}})
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

// toolbox is the tools manager as the worker pool uses it.
type toolbox struct {
	m   *tools.Manager
	log *slog.Logger
}

var _ workers.Toolbox = toolbox{}

// Offer offers the entries of the list that name a configured tool; an
// entry that does not (a server since removed from the roles file) is
// logged, not offered.
func (t toolbox) Offer(ctx context.Context, allowed []string) ([]master.Tool, string) {
	var ok []string
	for _, a := range allowed {
		if err := t.m.Check([]string{a}); err != nil {
			t.log.Warn("a role lists a tool that is not configured", "err", err)
			continue
		}
		ok = append(ok, a)
	}
	o, err := t.m.Tools(ctx, ok)
	if err != nil {
		return nil, "Your tools could not be loaded: " + err.Error()
	}
	if len(o.Missing) > 0 {
		t.log.Debug("a role lists tools its server does not have", "missing", o.Missing)
	}
	return o.Tools, o.Notice()
}

func (t toolbox) Allows(allowed []string, name string) bool { return tools.Allows(allowed, name) }

func (t toolbox) NeedsApproval(name string) bool { return t.m.Approval(name) }

func (t toolbox) Call(ctx context.Context, name, args string) master.ToolResult {
	r := t.m.Call(ctx, name, json.RawMessage(args))
	return master.ToolResult{Text: r.Text, IsError: r.IsError, Duration: r.Duration, Size: r.Size}
}

// catalog is the tools manager as /roles set checks and completes a
// role's tools list.
type catalog struct {
	m       *tools.Manager
	servers []config.MCPServer
}

var _ master.ToolCatalog = catalog{}

func (c catalog) Check(list []string) error { return c.m.Check(list) }

// namesWait bounds how long listing the servers' tools may take, within
// an autocomplete's three seconds; a server that takes longer (starting
// for the first time) is listed as "<server>.*" only, and its tools
// next time.
const namesWait = 1500 * time.Millisecond

func (c catalog) Names(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, namesWait)
	defer cancel()
	lists := make([][]string, len(c.servers))
	var wg sync.WaitGroup
	for i, s := range c.servers {
		wg.Go(func() {
			lists[i] = []string{s.Name + ".*"}
			if o, err := c.m.Tools(ctx, []string{s.Name + ".*"}); err == nil {
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
