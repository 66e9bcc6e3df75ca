package config

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"time"
)

// Tools configures the tools of workers beyond the roles file's
// mcp_servers: what fetch_url may reach, how long a call waits for a
// person's approval, and the environment stdio MCP servers start with.
type Tools struct {
	// FetchAllow is what fetch_url may fetch although it is not on the
	// public internet (CALLON_FETCH_ALLOW, comma-separated): host names,
	// "*.example.com", addresses and CIDRs.
	FetchAllow []string
	// ApprovalTimeout is how long a call that needs approval waits for a
	// person before it counts as denied (CALLON_APPROVAL_TIMEOUT).
	ApprovalTimeout time.Duration
	// Env is the environment every stdio MCP server starts with, before
	// its own env: callon's PATH and HOME, never its secrets.
	Env []string
}

// DefaultApprovalTimeout is CALLON_APPROVAL_TIMEOUT's default.
const DefaultApprovalTimeout = time.Hour

// hostPattern is a host name as CALLON_FETCH_ALLOW takes it, optionally
// "*." for its subdomains.
var hostPattern = regexp.MustCompile(`^(\*\.)?[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$`)

func (p *parser) tools() Tools {
	t := Tools{ApprovalTimeout: p.duration("CALLON_APPROVAL_TIMEOUT", DefaultApprovalTimeout, time.Second, 7*24*time.Hour)}
	for _, e := range strings.Split(p.getenv("CALLON_FETCH_ALLOW"), ",") {
		e = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(e), "."))
		if e == "" {
			continue
		}
		if _, err := netip.ParsePrefix(e); err == nil {
			t.FetchAllow = append(t.FetchAllow, e)
			continue
		}
		if _, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil || hostPattern.MatchString(e) {
			t.FetchAllow = append(t.FetchAllow, e)
			continue
		}
		p.fail("CALLON_FETCH_ALLOW", "%q is not a host name (or *.domain), an address or a CIDR such as 10.0.0.0/8", e)
	}
	for _, k := range []string{"PATH", "HOME"} {
		if v := p.getenv(k); v != "" {
			t.Env = append(t.Env, k+"="+v)
		}
	}
	return t
}

// String describes the tools settings.
func (t Tools) String() string {
	return fmt.Sprintf("fetch_allow=%s approval_timeout=%s", strings.Join(t.FetchAllow, ","), t.ApprovalTimeout)
}
