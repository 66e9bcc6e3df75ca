package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/callonbot/callon/master"
)

// Offer is what a role may use at the moment it is asked for.
type Offer struct {
	// Tools are the functions to give the model.
	Tools []master.Tool
	// Unavailable are the servers whose tools are left out because they
	// could not be started or listed; they are tried again later.
	Unavailable []Unavailable
	// Missing are the entries of the tools list that were not offered
	// although their server runs: it has no such tool, or the tool's name
	// cannot be a function name.
	Missing []string
}

// Unavailable is a server whose tools are left out of an Offer.
type Unavailable struct {
	Server string
	Reason string
}

// Notice tells the model which tools it is not getting and why, or is ""
// when none is missing.
func (o Offer) Notice() string {
	if len(o.Unavailable) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Some of your tools are unavailable right now:")
	for _, u := range o.Unavailable {
		fmt.Fprintf(&b, "\n- the tools of %s: %s", u.Server, u.Reason)
	}
	return b.String()
}

// ref is one entry of a role's tools list: server "" for fetch_url, tool
// "*" for every tool of the server.
type ref struct{ server, tool string }

// parseAllowed reads a role's tools list against the configured servers
// granted to guild ("": any), naming every bad entry.
func (m *Manager) parseAllowed(guild string, allowed []string) ([]ref, error) {
	var refs []ref
	var errs []error
	for _, a := range allowed {
		a = strings.TrimSpace(a)
		if a == FetchURL {
			refs = append(refs, ref{})
			continue
		}
		srv, tool, ok := strings.Cut(a, ".")
		switch {
		case !ok || tool == "":
			errs = append(errs, fmt.Errorf("tools: %q: want %s, <server>.<tool> or <server>.*", a, FetchURL))
		case m.servers[srv] == nil:
			errs = append(errs, fmt.Errorf("tools: %q: no MCP server %q is configured", a, srv))
		case !m.servers[srv].granted(guild):
			errs = append(errs, notGranted(a, srv))
		default:
			refs = append(refs, ref{srv, tool})
		}
	}
	return refs, errors.Join(errs...)
}

// Tools returns what a role of guild ("": the operator's) with the tools
// list allowed is offered now: fetch_url if listed, and each listed MCP
// tool of a server granted to guild as "<server>__<tool>" with its
// server's description and input schema ("<server>.*" lists every tool of
// the server). Servers are started as needed, in parallel; a server that
// cannot be started is left out and named in Offer.Unavailable. The error
// is a bad entry in allowed (one not granted to guild included), or ctx
// ending.
func (m *Manager) Tools(ctx context.Context, guild string, allowed []string) (Offer, error) {
	refs, err := m.parseAllowed(guild, allowed)
	if err != nil {
		return Offer{}, err
	}
	var names []string
	for _, r := range refs {
		if r.server != "" && !slices.Contains(names, r.server) {
			names = append(names, r.server)
		}
	}
	lists := make(map[string][]*mcp.Tool, len(names))
	errs := make(map[string]error, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Go(func() {
			list, err := m.servers[n].tools(ctx)
			mu.Lock()
			defer mu.Unlock()
			lists[n], errs[n] = list, err
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Offer{}, fmt.Errorf("tools: %w", err)
	}

	var o Offer
	offered := map[string]bool{}
	add := func(t master.Tool) {
		if !offered[t.Name] {
			offered[t.Name] = true
			o.Tools = append(o.Tools, t)
		}
	}
	for _, r := range refs {
		if r.server == "" {
			add(fetchURLTool())
			continue
		}
		if err := errs[r.server]; err != nil {
			if !slices.ContainsFunc(o.Unavailable, func(u Unavailable) bool { return u.Server == r.server }) {
				o.Unavailable = append(o.Unavailable, Unavailable{Server: r.server, Reason: err.Error()})
			}
			continue
		}
		found := false
		for _, t := range lists[r.server] {
			if r.tool != "*" && t.Name != r.tool {
				continue
			}
			found = true
			if mt, ok := modelTool(r.server, t); ok {
				add(mt)
			} else if !slices.Contains(o.Missing, r.server+"."+t.Name) {
				o.Missing = append(o.Missing, r.server+"."+t.Name)
			}
		}
		if !found && r.tool != "*" {
			o.Missing = append(o.Missing, r.server+"."+r.tool)
		}
	}
	return o, nil
}

// tools returns the server's tools, starting it if need be.
func (s *server) tools(ctx context.Context) ([]*mcp.Tool, error) {
	sess, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.m.opts.StartTimeout)
	defer cancel()
	list, err := sess.listTools(ctx)
	if err != nil {
		return nil, s.scrub(fmt.Errorf("MCP server %s: %w", s.spec.Name, err))
	}
	return list, nil
}

// functionName is what OpenAI-compatible APIs accept as a function name.
var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// maxDescription bounds a tool's description as the model sees it.
const maxDescription = 1024

// modelTool is an MCP tool as the model is offered it, or false when its
// name cannot be a function name.
func modelTool(server string, t *mcp.Tool) (master.Tool, bool) {
	name := server + Separator + t.Name
	if !functionName.MatchString(name) {
		return master.Tool{}, false
	}
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = t.Title
	}
	if len(desc) > maxDescription {
		desc = strings.ToValidUTF8(desc[:maxDescription], "") + "…"
	}
	params := json.RawMessage(`{"type":"object","properties":{}}`)
	if t.InputSchema != nil {
		if b, err := json.Marshal(t.InputSchema); err == nil && string(b) != "null" {
			params = b
		}
	}
	return master.Tool{Name: name, Description: desc, Parameters: params}, true
}
