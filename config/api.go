package config

import "strings"

// DefaultAPIRate is how many requests a minute one process's API takes.
const DefaultAPIRate = 120

// API is the inbound HTTP API (docs/api.md, "Inbound API").
type API struct {
	// Secret is CALLON_API_SECRET: the HMAC key of requests and of the
	// callbacks' events; "" turns the API off. Secret.
	Secret string
	// Rate is CALLON_API_RATE: requests a minute one process takes.
	Rate int
}

// Enabled reports whether the API is served.
func (a API) Enabled() bool { return a.Secret != "" }

func (p *parser) api(httpAddr string) API {
	a := API{
		Secret: p.getenv("CALLON_API_SECRET"), // verbatim: it is a key
		Rate:   p.int("CALLON_API_RATE", DefaultAPIRate, 1, 100000),
	}
	if a.Secret == "" {
		return a
	}
	if strings.TrimSpace(a.Secret) == "" || len(a.Secret) < 16 {
		p.fail("CALLON_API_SECRET", "must be at least 16 characters (a random string: openssl rand -base64 32)")
	}
	if httpAddr == "" {
		p.fail("CALLON_API_SECRET", "is set but CALLON_HTTP_ADDR is not: the API is served on CALLON_HTTP_ADDR, set it too (e.g. :8080)")
	}
	return a
}
