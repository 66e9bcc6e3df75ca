package tools_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/callonbot/callon/tools"
	"github.com/callonbot/callon/tools/fetch"
)

// An MCP server granted to guild A is nobody else's: guild B's roles are
// neither offered its tools, nor allowed to list them, nor can a call of
// one reach the server, whatever the model asks. A server that names no
// guilds is every guild's, as before grants existed; the operator's own
// scope ("") has every grant.
func TestServersAreGrantedPerGuild(t *testing.T) {
	t.Parallel()
	hostfs := stdioServer("hostfs", nil)
	hostfs.Guilds = []string{"111"}
	open := stdioServer("open", nil)
	m := setup(t, []tools.Server{hostfs, open}, tools.Options{}, nil)

	if o, err := m.Tools(t.Context(), "111", []string{"hostfs.echo"}); err != nil || !slices.Equal(toolNames(o), []string{"hostfs__echo"}) {
		t.Errorf("guild A's offer: %v, %v; want hostfs__echo", toolNames(o), err)
	}
	if _, err := m.Tools(t.Context(), "222", []string{"hostfs.echo"}); err == nil || !strings.Contains(err.Error(), "not available in this Discord server") {
		t.Errorf("guild B's offer of hostfs: %v, want a refusal naming the grant", err)
	}
	if err := m.Check("222", []string{"hostfs.*"}); err == nil {
		t.Error("guild B may list hostfs.* for a role")
	}
	for _, g := range []string{"111", "222", ""} {
		if err := m.Check(g, []string{"open.*", "fetch_url"}); err != nil {
			t.Errorf("guild %q may not list a server that names no guilds: %v", g, err)
		}
	}
	if err := m.Check("", []string{"hostfs.echo"}); err != nil {
		t.Errorf("the operator's scope: %v", err)
	}
	if r := m.Call(t.Context(), "222", "hostfs__echo", `{"text": "x"}`); !r.IsError || !strings.Contains(r.Text, "unknown tool") {
		t.Errorf("guild B's call of hostfs: %+v, want an unknown tool", r)
	}
	if r := m.Call(t.Context(), "111", "hostfs__echo", `{"text": "x"}`); r.IsError || r.Text != "x" {
		t.Errorf("guild A's call: %+v", r)
	}
	if m.Granted("222", "hostfs") || !m.Granted("111", "hostfs") || !m.Granted("222", "open") {
		t.Error("Granted disagrees with the grants")
	}
}

// A private host the operator grants to one guild (guilds.<id>.fetch_allow)
// is fetched for that guild's roles only; CALLON_FETCH_ALLOW's hosts are
// every guild's.
func TestPrivateFetchHostsPerGuild(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "internal wiki") }))
	t.Cleanup(srv.Close)
	args := json.RawMessage(`{"url": "` + srv.URL + `"}`)
	m := setup(t, nil, tools.Options{GuildFetchAllow: map[string][]string{"111": {"127.0.0.1"}}}, nil)
	if r := m.Call(t.Context(), "111", "fetch_url", string(args)); r.IsError || !strings.Contains(r.Text, "internal wiki") {
		t.Errorf("guild A's fetch: %+v", r)
	}
	for _, g := range []string{"222", ""} {
		if r := m.Call(t.Context(), g, "fetch_url", string(args)); !r.IsError || !strings.Contains(r.Text, "loopback") {
			t.Errorf("guild %q's fetch of A's private host: %+v, want it refused", g, r)
		}
	}
	everyone := setup(t, nil, tools.Options{Fetch: fetch.Options{Allow: []string{"127.0.0.1"}}}, nil)
	if r := everyone.Call(t.Context(), "222", "fetch_url", string(args)); r.IsError {
		t.Errorf("CALLON_FETCH_ALLOW's host for guild B: %+v", r)
	}
}

// The lethal combination: a role that reads private data and can send
// data out has each outbound call approved by a person, unless it goes to
// a host the operator listed; a role with only one of the two needs no
// approval for it.
func TestLethalCombinationNeedsApproval(t *testing.T) {
	t.Parallel()
	m := setup(t, []tools.Server{
		{Name: "files", Command: []string{"x"}, PrivateTools: []string{"read"}},
		{Name: "db", Command: []string{"x"}, PrivateAll: true},
		{Name: "mail", Command: []string{"x"}, OutboundTools: []string{"send"}},
		{Name: "calc", Command: []string{"x"}},
	}, tools.Options{OutboundAllow: []string{"docs.example.com", "*.wikipedia.org"}}, nil)
	fetchTo := func(u string) json.RawMessage { return json.RawMessage(`{"url": "` + u + `"}`) }
	tests := []struct {
		name    string
		allowed []string
		call    string
		args    json.RawMessage
		want    bool
	}{
		{"fetch alone", []string{"fetch_url", "calc.*"}, "fetch_url", fetchTo("https://evil.example/x"), false},
		{"private reader fetching anywhere", []string{"fetch_url", "files.read"}, "fetch_url", fetchTo("https://evil.example/?d=secret"), true},
		{"every tool of a private server", []string{"fetch_url", "db.*"}, "fetch_url", fetchTo("https://evil.example/"), true},
		{"a server with one private tool, as server.*", []string{"fetch_url", "files.*"}, "fetch_url", fetchTo("https://evil.example/"), true},
		{"a tool of it not marked", []string{"fetch_url", "files.list"}, "fetch_url", fetchTo("https://evil.example/"), false},
		{"to a host the operator listed", []string{"fetch_url", "db.*"}, "fetch_url", fetchTo("https://docs.example.com/page"), false},
		{"to a subdomain listed", []string{"fetch_url", "db.*"}, "fetch_url", fetchTo("https://en.wikipedia.org/wiki/X"), false},
		{"arguments that are no URL", []string{"fetch_url", "db.*"}, "fetch_url", json.RawMessage(`"x"`), true},
		{"a tool marked sends_out", []string{"mail.*", "db.query"}, "mail__send", json.RawMessage(`{}`), true},
		{"the reading itself", []string{"fetch_url", "db.*"}, "db__query", json.RawMessage(`{}`), false},
		{"sends_out without a private reader", []string{"mail.*", "calc.*"}, "mail__send", json.RawMessage(`{}`), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.NeedsApproval(tc.allowed, tc.call, string(tc.args)); got != tc.want {
				t.Errorf("%s: Approval(%q, %s) = %v, want %v", tc.name, tc.allowed, tc.call, got, tc.want)
			}
		})
	}
}

// A server's approvers are returned for its calls only.
func TestApprovers(t *testing.T) {
	t.Parallel()
	m := setup(t, []tools.Server{{Name: "hostfs", Command: []string{"x"}, ApproveAll: true, Approvers: []string{"333"}}}, tools.Options{}, nil)
	if got := m.Approvers("hostfs__write"); !slices.Equal(got, []string{"333"}) {
		t.Errorf("Approvers(hostfs__write) = %v", got)
	}
	if got := m.Approvers("fetch_url"); got != nil {
		t.Errorf("Approvers(fetch_url) = %v, want none", got)
	}
}

// The operator's terminal (callon chat) holds every server's grant,
// whatever guild its team names, and decides every request itself: the
// servers' approvers are Discord roles, and the terminal's person is the
// operator who named them. A call still needs approval where the server
// says so.
func TestOperatorToolboxHasEveryGrantAndDecides(t *testing.T) {
	t.Parallel()
	hostfs := stdioServer("hostfs", nil)
	hostfs.Guilds, hostfs.ApproveAll, hostfs.Approvers = []string{"111"}, true, []string{"333"}
	m := setup(t, []tools.Server{hostfs}, tools.Options{}, nil)
	op := m.Operator()
	if offered, notice := op.Offer(t.Context(), "terminal", []string{"hostfs.echo"}); len(offered) != 1 || notice != "" {
		t.Errorf("the terminal's offer: %v (%q), want hostfs's echo", offered, notice)
	}
	if !op.Allows("terminal", []string{"hostfs.echo"}, "hostfs__echo") || m.Allows("222", []string{"hostfs.echo"}, "hostfs__echo") {
		t.Error("the terminal is refused hostfs, or another guild is allowed it")
	}
	if !op.NeedsApproval([]string{"hostfs.echo"}, "hostfs__echo", `{"text":"x"}`) {
		t.Error("the terminal's call of a server that requires approval needs none")
	}
	if got := op.Approvers("hostfs__echo"); got != nil {
		t.Errorf("the terminal's approvers = %v, want none: its operator decides", got)
	}
	if r := op.Call(t.Context(), "terminal", "hostfs__echo", `{"text": "x"}`); r.IsError || r.Text != "x" {
		t.Errorf("the terminal's call: %+v", r)
	}
}
