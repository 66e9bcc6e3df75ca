package bot

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
)

// DefaultAPIURL is Discord itself; discordgo's endpoints already point there.
const DefaultAPIURL = "https://discord.com"

// restTimeout bounds each REST call, as discordgo's default client does.
const restTimeout = 20 * time.Second

// apiVersionRE matches a base URL that wrongly includes the API path.
var apiVersionRE = regexp.MustCompile(`/api(/v\d+)?$`)

// NewHTTPClient returns the HTTP client for discordgo's REST calls. For
// apiURL "https://discord.com" (or "") it is a plain client. Otherwise
// requests to https://discord.com are sent to apiURL instead, keeping their
// path and query: apiURL "http://127.0.0.1:8080" turns
// https://discord.com/api/v9/gateway into http://127.0.0.1:8080/api/v9/gateway.
// apiURL is a base such as a REST proxy or a fake Discord, without /api/vN.
//
// Rewriting in the client, rather than reassigning discordgo's Endpoint
// variables, keeps the redirection per session: the variables are global.
func NewHTTPClient(apiURL string, timeout time.Duration) (*http.Client, error) {
	if apiURL == "" || strings.TrimSuffix(apiURL, "/") == DefaultAPIURL {
		return &http.Client{Timeout: timeout}, nil
	}
	base, err := url.Parse(apiURL)
	if err != nil {
		return nil, fmt.Errorf("discord API URL: %w", err)
	}
	switch {
	case base.Scheme != "http" && base.Scheme != "https":
		return nil, fmt.Errorf("discord API URL %q: scheme must be http or https", apiURL)
	case base.Host == "":
		return nil, fmt.Errorf("discord API URL %q: no host", apiURL)
	case base.User != nil || base.RawQuery != "" || base.Fragment != "":
		return nil, fmt.Errorf("discord API URL %q: want only scheme, host and path", apiURL)
	}
	base.Path = strings.TrimSuffix(base.Path, "/")
	base.RawPath = ""
	if apiVersionRE.MatchString(base.Path) {
		return nil, fmt.Errorf("discord API URL %q: leave out /api/vN, discordgo adds it", apiURL)
	}
	return &http.Client{Timeout: timeout, Transport: &rewriter{base: base, next: http.DefaultTransport}}, nil
}

// rewriter sends requests for discord.com to base.
type rewriter struct {
	base *url.URL
	next http.RoundTripper
}

// RoundTrip implements http.RoundTripper. It leaves the caller's request
// untouched, as the contract requires, and rewrites a clone.
func (t *rewriter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" || !strings.EqualFold(req.URL.Host, "discord.com") {
		return t.next.RoundTrip(req)
	}
	out := req.Clone(req.Context())
	out.URL.Scheme = t.base.Scheme
	out.URL.Host = t.base.Host
	out.URL.Path = t.base.Path + req.URL.Path
	if req.URL.RawPath != "" {
		out.URL.RawPath = t.base.Path + req.URL.RawPath
	}
	// The Host header names the server actually reached, so a proxy with
	// virtual hosts routes the request to itself, not to discord.com.
	out.Host = ""
	return t.next.RoundTrip(out)
}

// NewSession returns a discordgo session for a bot token (with or without
// the "Bot " prefix) whose REST calls go to apiURL (see NewHTTPClient) and
// that identifies with intents. discordgo's Open finds the gateway with GET
// /api/v9/gateway through the session's client, so the gateway comes from
// apiURL too.
func NewSession(token, apiURL string, intents discordgo.Intent) (*discordgo.Session, error) {
	token = strings.TrimSpace(strings.TrimPrefix(token, "Bot "))
	if token == "" {
		return nil, errors.New("discord session: empty bot token")
	}
	client, err := NewHTTPClient(apiURL, restTimeout)
	if err != nil {
		return nil, err
	}
	s, err := discordgo.New("Bot " + token)
	if err != nil {
		return nil, fmt.Errorf("discord session: %w", err)
	}
	s.Client = client
	s.Identify.Intents = intents
	return s, nil
}

// metered counts every REST request by route and status for Metrics.
// discordgo retries a 429 itself, so each try is seen here.
type metered struct {
	next http.RoundTripper
	m    Metrics
}

// RoundTrip implements http.RoundTripper.
func (t *metered) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	status := 0
	if err == nil {
		status = resp.StatusCode
	}
	t.m.DiscordRequest(routeName(req.Method, req.URL.Path), status)
	return resp, err
}

// routeName names a REST request for metrics, with a bounded set of values:
// the method and the path below /api/vN with every id as {id}, tokens as
// {token} and emoji as {emoji}: "PATCH /channels/{id}/messages/{id}".
func routeName(method, path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	if len(segs) >= 2 && segs[0] == "api" && strings.HasPrefix(segs[1], "v") {
		segs = segs[2:]
	}
	for i, seg := range segs {
		prev := ""
		if i > 0 {
			prev = segs[i-1]
		}
		switch {
		case prev == "reactions":
			segs[i] = "{emoji}"
		case i >= 2 && (segs[i-2] == "webhooks" || segs[i-2] == "interactions") && prev == "{id}":
			segs[i] = "{token}"
		case isSnowflake(seg):
			segs[i] = "{id}"
		case len(seg) > 32 || strings.ContainsAny(seg, "%:."):
			segs[i] = "{}" // nothing of discordgo's own looks like this
		}
	}
	return method + " /" + strings.Join(segs, "/")
}
