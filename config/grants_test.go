package config_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/callonbot/callon/config"
)

// The roles file grants each MCP server to guilds (a list, or `all`
// written out; none named: every guild, with a warning at start), names
// its approvers (Discord role ids), marks the tools that read private
// data (every tool unless it says otherwise) and those that send data
// out, and grants private fetch hosts per guild.
func TestRolesFileGrants(t *testing.T) {
	t.Parallel()
	rf, err := config.ParseRolesFile([]byte(`
mcp_servers:
  hostfs:
    command: [fs]
    guilds: ["111", "222"]
    approval: required
    approvers: "333"
    reads_private: [read, grep]
  mailer:
    url: https://mail.example.com/mcp
    guilds: all
    approvers: ["444", "555"]
    reads_private: false
    sends_out: [send]
  calc:
    command: [calc]
outbound_allow: [docs.example.com, "*.wikipedia.org"]
guilds:
  "111":
    fetch_allow: [wiki.internal, 10.1.0.0/16]
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]config.MCPServer{}
	for _, s := range rf.MCPServers {
		byName[s.Name] = s
	}
	for name, want := range map[string]struct {
		guilds    config.GuildGrant
		approvers []string
		private   config.ToolMark
		out       config.ToolMark
	}{
		"hostfs": {config.GuildGrant{Guilds: []string{"111", "222"}}, []string{"333"}, config.ToolMark{Tools: []string{"read", "grep"}}, config.ToolMark{}},
		"mailer": {config.GuildGrant{All: true}, []string{"444", "555"}, config.ToolMark{}, config.ToolMark{Tools: []string{"send"}}},
		"calc":   {config.GuildGrant{Implicit: true}, nil, config.ToolMark{All: true}, config.ToolMark{}},
	} {
		s := byName[name]
		if !reflect.DeepEqual(s.Guilds, want.guilds) || !reflect.DeepEqual(s.Approvers, want.approvers) ||
			!reflect.DeepEqual(s.ReadsPrivate, want.private) || !reflect.DeepEqual(s.SendsOut, want.out) {
			t.Errorf("%s: guilds %+v approvers %v private %+v out %+v; want %+v", name, s.Guilds, s.Approvers, s.ReadsPrivate, s.SendsOut, want)
		}
	}
	if !byName["hostfs"].Guilds.Allows("111") || byName["hostfs"].Guilds.Allows("999") || byName["calc"].Guilds.Allows("999") {
		t.Error("GuildGrant.Allows disagrees with the grants")
	}
	if got := rf.FetchAllow["111"]; !reflect.DeepEqual(got, []string{"wiki.internal", "10.1.0.0/16"}) {
		t.Errorf("fetch_allow of 111 = %v", got)
	}
	if !reflect.DeepEqual(rf.OutboundAllow, []string{"docs.example.com", "*.wikipedia.org"}) {
		t.Errorf("outbound_allow = %v", rf.OutboundAllow)
	}
}

func TestRolesFileGrantErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ yaml, want string }{
		{"mcp_servers:\n  a: {command: [x], guilds: [alpha]}\n", `guilds: "alpha" is not a numeric Discord id`},
		{"mcp_servers:\n  a: {command: [x], guilds: some}\n", "guilds: want `all` or a list"},
		{"mcp_servers:\n  a: {command: [x], approvers: [admins]}\n", `"admins" is not a numeric Discord role id`},
		{"mcp_servers:\n  a: {command: [x], sends_out: sometimes}\n", "want true (every tool of the server), false (none) or a list"},
		{"mcp_servers:\n  a: {command: [x], reads_private: [\"bad name\"]}\n", `reads_private: "bad name" is not a tool name`},
		{"guilds:\n  \"1\":\n    fetch_allow: [\"not a host\"]\n", `guild 1: fetch_allow: "not a host" is not a host name`},
		{"outbound_allow: [\"a b\"]\nroles: [{name: r, description: d, prompt: p}]\n", `outbound_allow: "a b"`},
	} {
		_, err := config.ParseRolesFile([]byte(tc.yaml), env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// An MCP server that names no guilds is no guild's: a bot with one
// refuses to start, naming it, unless DISCORD_GUILD_ID says which guild
// the roles file is for; then it is that guild's alone. (It used to be
// every guild's: the tools of the host, for any server inviting the bot.)
func TestImplicitGrantsNeedAGuild(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "roles.yaml")
	if err := os.WriteFile(path, []byte("mcp_servers:\n  open: {command: [x]}\n  closed: {command: [x], guilds: all}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"CALLON_ROLES_FILE": path, "DATABASE_URL": "postgres://x@localhost/callon",
		"DISCORD_TOKEN": "tok", "OPENAI_API_KEY": "sk-x"}
	c := config.Load(env(vars))
	err := c.Validate(config.NeedDatabase | config.NeedDiscord | config.NeedLLM)
	if err == nil || !strings.Contains(err.Error(), "mcp_servers open name no guilds") || strings.Contains(err.Error(), "closed") {
		t.Errorf("the bot's configuration: %v, want an error naming the server without guilds only", err)
	}
	if err := c.Validate(config.NeedDatabase | config.NeedLLM); err != nil {
		t.Errorf("a chat's or a worker's configuration: %v, want none (no guild may use the server there)", err)
	}
	for _, s := range c.MCPServers {
		if s.Name == "open" && (s.Guilds.Allows("g1") || s.Guilds.All) {
			t.Errorf("server open without guilds: %+v allows guild g1", s.Guilds)
		}
	}

	vars["DISCORD_GUILD_ID"] = "111"
	c = config.Load(env(vars))
	if err := c.Validate(config.NeedDatabase | config.NeedDiscord | config.NeedLLM); err != nil {
		t.Fatalf("with DISCORD_GUILD_ID: %v", err)
	}
	for _, s := range c.MCPServers {
		if s.Name == "open" && (!s.Guilds.Allows("111") || s.Guilds.Allows("222")) {
			t.Errorf("with DISCORD_GUILD_ID=111 server open is %+v, want guild 111's alone", s.Guilds)
		}
	}
}
