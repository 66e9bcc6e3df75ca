package config

import (
	"net/url"
	"strings"
)

// publicURL reads CALLON_PUBLIC_URL: where Discord can reach callon's
// HTTP server (CALLON_HTTP_ADDR, behind whatever proxy), such as
// https://callon.example.com. With it, the members of teams with personas
// post under pictures callon draws, served at /avatars/; without it,
// under Discord's default avatars. "" for none.
func (p *parser) publicURL(httpAddr string) string {
	s := strings.TrimRight(strings.TrimSpace(p.getenv("CALLON_PUBLIC_URL")), "/")
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		p.fail("CALLON_PUBLIC_URL", "must be an http(s) URL such as https://callon.example.com (no query, no password), got %q", s)
		return ""
	case httpAddr == "":
		p.fail("CALLON_PUBLIC_URL", "is set but CALLON_HTTP_ADDR is not: the pictures are served on CALLON_HTTP_ADDR, set it too (e.g. :8080)")
	}
	return s
}
