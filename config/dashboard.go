package config

import (
	"net/url"
	"strings"
)

// Dashboard is the operator dashboard under /dashboard/ (docs: operating).
// It is served only when a way to sign in is configured.
type Dashboard struct {
	// Token is CALLON_DASHBOARD_TOKEN: the operator's sign-in, as a bearer
	// token or through the login form; "" turns it off. Secret.
	Token string
	// ClientSecret is DISCORD_CLIENT_SECRET: with it (and the application
	// id, DISCORD_APP_ID), server admins sign in with Discord. Secret.
	ClientSecret string
	// RedirectURL is CALLON_DASHBOARD_REDIRECT_URL: where Discord sends
	// the browser back, https://<host>/dashboard/auth/callback as
	// registered in the Developer Portal's OAuth2 redirects.
	RedirectURL string
}

// Enabled reports whether the dashboard is served.
func (d Dashboard) Enabled() bool { return d.Token != "" || d.OAuth() }

// OAuth reports whether server admins may sign in with Discord.
func (d Dashboard) OAuth() bool { return d.ClientSecret != "" }

func (p *parser) dashboard(httpAddr, appID string) Dashboard {
	d := Dashboard{
		Token:        p.getenv("CALLON_DASHBOARD_TOKEN"), // verbatim: it is a secret
		ClientSecret: strings.TrimSpace(p.getenv("DISCORD_CLIENT_SECRET")),
		RedirectURL:  strings.TrimSpace(p.getenv("CALLON_DASHBOARD_REDIRECT_URL")),
	}
	if d.Token != "" && (strings.TrimSpace(d.Token) == "" || len(d.Token) < 16) {
		p.fail("CALLON_DASHBOARD_TOKEN", "must be at least 16 characters (a random string: openssl rand -base64 32)")
	}
	if d.OAuth() {
		if appID == "" {
			p.fail("DISCORD_CLIENT_SECRET", "is set but DISCORD_APP_ID is not: the OAuth2 client id is the application id, set it too")
		}
		u, err := url.Parse(d.RedirectURL)
		switch {
		case d.RedirectURL == "":
			p.fail("CALLON_DASHBOARD_REDIRECT_URL", "is required with DISCORD_CLIENT_SECRET: https://<your host>/dashboard/auth/callback, as registered in the Developer Portal")
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || !strings.HasSuffix(u.Path, "/dashboard/auth/callback"):
			p.fail("CALLON_DASHBOARD_REDIRECT_URL", "must be an http(s) URL ending in /dashboard/auth/callback, got %q", d.RedirectURL)
		}
	}
	if d.Enabled() && httpAddr == "" {
		p.fail("CALLON_DASHBOARD_TOKEN", "a dashboard sign-in is set but CALLON_HTTP_ADDR is not: the dashboard is served on CALLON_HTTP_ADDR, set it too (e.g. :8080)")
	}
	return d
}
