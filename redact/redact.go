// Package redact takes secrets out of text before it crosses a boundary:
// a log line, a database row, a model's prompt, a Discord message. It is
// the one place that knows where secrets hide — a URL's userinfo and
// query, credential-like key=value pairs and Authorization-style headers,
// Standard Webhooks secrets (whsec_…), API tokens shaped like sk-… — and
// every adapter that shows an URL or an error from the outside world
// (MCP servers, model providers, webhooks and callbacks, Discord's CDN)
// passes it through here, with the secrets it knows of besides.
package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces every secret.
const Mask = "[REDACTED]"

// URL returns u with its secrets masked: the userinfo (a user and
// password, or a lone token), every query value and the fragment. What it
// cannot parse it masks whole.
func URL(u string) string {
	if u == "" {
		return ""
	}
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil || p.Scheme == "" {
		return Mask
	}
	return redactURL(p)
}

func redactURL(p *url.URL) string {
	if p.User != nil {
		p.User = url.User("REDACTED")
	}
	if p.RawQuery != "" {
		q := p.Query()
		for k := range q {
			q[k] = []string{"REDACTED"}
		}
		p.RawQuery = q.Encode()
	}
	p.Fragment, p.RawFragment = "", ""
	return p.String()
}

var (
	// urlPattern finds URLs in free text.
	urlPattern = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]{1,15}://[^\s"'<>` + "`" + `]+`)
	// whsec is a Standard Webhooks secret.
	whsec = regexp.MustCompile(`whsec_[A-Za-z0-9+/=_-]+`)
	// apiToken is an API key shaped like OpenAI's and others' (sk-…,
	// sk-proj-…, sk-ant-…).
	apiToken = regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{8,}`)
	// scheme is an Authorization header's value after its scheme.
	scheme = regexp.MustCompile(`(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}`)
	// pair is a credential-like name followed by : or = and its value.
	pair = regexp.MustCompile(`(?i)\b((?:[a-z0-9_-]*(?:api[_-]?key|apikey|token|secret|password|passwd|authorization|auth))` +
		`["']?\s*[:=]\s*["']?)([^\s"',;&]+)`)
)

// Text returns s with every secret it can recognize masked, and each of
// known (exact strings the caller holds: keys, header values) too.
func Text(s string, known ...string) string {
	for _, k := range known {
		if len(k) >= 4 {
			s = strings.ReplaceAll(s, k, Mask)
		}
	}
	s = urlPattern.ReplaceAllStringFunc(s, func(u string) string {
		trail := ""
		for strings.HasSuffix(u, ".") || strings.HasSuffix(u, ",") || strings.HasSuffix(u, ")") || strings.HasSuffix(u, ":") {
			trail = u[len(u)-1:] + trail
			u = u[:len(u)-1]
		}
		p, err := url.Parse(u)
		if err != nil {
			return Mask + trail
		}
		return redactURL(p) + trail
	})
	s = whsec.ReplaceAllString(s, "whsec_"+Mask)
	s = apiToken.ReplaceAllString(s, "sk-"+Mask)
	s = scheme.ReplaceAllString(s, "$1 "+Mask)
	s = pair.ReplaceAllString(s, "${1}"+Mask)
	return s
}

// Error returns err with its text passed through Text (errors.Is and As
// still see err), or err itself when nothing needed masking.
func Error(err error, known ...string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := Text(msg, known...); clean != msg {
		return &redacted{msg: clean, err: err}
	}
	return err
}

// redacted is an error whose text had secrets in it.
type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }
