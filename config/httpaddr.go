package config

import (
	"net"
	"strings"
)

// httpAddr reads CALLON_HTTP_ADDR: "" (no endpoint) or host:port, such as
// ":8080", where /healthz, /readyz and /metrics are served.
func (p *parser) httpAddr() string {
	s := strings.TrimSpace(p.getenv("CALLON_HTTP_ADDR"))
	if s == "" {
		return ""
	}
	if _, port, err := net.SplitHostPort(s); err != nil || port == "" {
		p.fail("CALLON_HTTP_ADDR", "must be host:port or :port, such as \":8080\", got %q", s)
		return ""
	}
	return s
}
