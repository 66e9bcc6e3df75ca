package config_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/config"
)

const rolesYAML = `
# default roster for every server
roles:
  - name: researcher
    description: Finds facts
    prompt: You research.
guilds:
  "111111111111111111":
    roles:
      - name: analyst
        description: Reads the market
        prompt: |
          You analyse markets.
          Cite numbers.
        model: gpt-4o
        temperature: 0.3
        max_tokens: 1500
        timeout: 2m
    channels:
      222222222222222222:
        roles:
          - name: copywriter
            description: Writes copy
            prompt: You write punchy copy.
          - name: seo
            description: Optimises for search
            prompt: You do SEO.
  "333333333333333333":
    channels:
      "444444444444444444":
        roles:
          - {name: sre, description: Keeps it up, prompt: You run production.}
`

func TestParseRoles(t *testing.T) {
	t.Parallel()
	rosters, err := config.ParseRoles([]byte(rolesYAML))
	if err != nil {
		t.Fatalf("ParseRoles: %v", err)
	}
	var scopes []string
	for _, r := range rosters {
		var names []string
		for _, role := range r.Roles {
			names = append(names, role.Name)
		}
		scopes = append(scopes, r.GuildID+"/"+r.ChannelID+":"+strings.Join(names, ","))
	}
	want := []string{
		"/:researcher",
		"111111111111111111/:analyst",
		"111111111111111111/222222222222222222:copywriter,seo",
		"333333333333333333/444444444444444444:sre",
	}
	if !slices.Equal(scopes, want) {
		t.Errorf("got rosters %q, want %q", scopes, want)
	}
	a := rosters[1].Roles[0]
	if a.Prompt != "You analyse markets.\nCite numbers." || a.Model != "gpt-4o" || a.Temperature == nil || *a.Temperature != 0.3 ||
		a.MaxTokens != 1500 || a.Timeout != 2*time.Minute {
		t.Errorf("got analyst %+v, want every field parsed", a)
	}
}

func TestParseRolesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"syntax", "roles: [", []string{"line 1", "not valid YAML"}},
		{"unknown field", "roles:\n  - name: a\n    descripton: typo\n", []string{"line 3", "descripton"}},
		{"empty", "", []string{"defines no roles"}},
		{"bad guild id", "guilds:\n  marketing:\n    roles: [{name: a, description: d, prompt: p}]\n", []string{"line 2", `guilds: "marketing"`, "numeric Discord id"}},
		{"bad channel id", "guilds:\n  \"1\":\n    channels:\n      general:\n        roles: [{name: a, description: d, prompt: p}]\n", []string{"guild 1", `channel "general"`}},
		{"channel without roles", "guilds:\n  \"1\":\n    channels:\n      \"2\": {roles: []}\n", []string{"guild 1, channel 2", "no roles"}},
		{"guild without anything", "guilds:\n  \"1\": {}\n", []string{"guild 1", "no roles and no channels"}},
		{"bad timeout", "guilds:\n  \"1\":\n    channels:\n      \"2\":\n        roles: [{name: sre, description: d, prompt: p, timeout: 5 minutes}]\n",
			[]string{"guild 1, channel 2", `role "sre"`, `timeout "5 minutes"`}},
	}
	for _, tc := range tests {
		_, err := config.ParseRoles([]byte(tc.yaml))
		if err == nil {
			t.Errorf("%s: got nil error, want one", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: got %q, want it to contain %q", tc.name, err, w)
			}
		}
	}
}

func TestLoadRolesFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "roles.yaml")
	if err := os.WriteFile(good, []byte(rolesYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	c := config.Load(env(map[string]string{"CALLON_ROLES_FILE": good}))
	if err := c.Validate(0); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if len(c.Roles) != 4 {
		t.Errorf("got %d rosters, want 4", len(c.Roles))
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("guilds:\n  \"1\":\n    channels:\n      \"2\":\n        roles: [{name: x, description: d, prompt: p, temprature: 1}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		{bad, []string{"CALLON_ROLES_FILE", bad, "temprature"}},
		{filepath.Join(dir, "missing.yaml"), []string{"CALLON_ROLES_FILE", "missing.yaml", "no such file"}},
	} {
		err := config.Load(env(map[string]string{"CALLON_ROLES_FILE": tc.path})).Validate(0)
		if err == nil {
			t.Errorf("%s: got nil error, want one", tc.path)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("got %q, want it to contain %q", err, w)
			}
		}
	}
}

func TestModelsAndMaxPrompt(t *testing.T) {
	t.Parallel()
	c := config.Load(env(nil))
	if want := []string{config.DefaultWorkerModel, config.DefaultMasterModel}; !slices.Equal(c.Models, want) {
		t.Errorf("default Models = %q, want %q", c.Models, want)
	}
	if c.Limits.MaxPrompt != config.DefaultMaxPrompt {
		t.Errorf("default MaxPrompt = %d, want %d", c.Limits.MaxPrompt, config.DefaultMaxPrompt)
	}
	c = config.Load(env(map[string]string{
		"CALLON_WORKER_MODEL": "llama3",
		"CALLON_MODELS":       " gpt-4.1, claude-sonnet,,gpt-4.1 ",
		"CALLON_MAX_PROMPT":   "8000",
	}))
	if err := c.Validate(0); err != nil {
		t.Fatal(err)
	}
	if want := []string{"llama3", "gpt-4.1", "claude-sonnet"}; !slices.Equal(c.Models, want) {
		t.Errorf("Models = %q, want %q: the worker model first, then the list without duplicates", c.Models, want)
	}
	if c.Limits.MaxPrompt != 8000 {
		t.Errorf("MaxPrompt = %d, want 8000", c.Limits.MaxPrompt)
	}
	err := config.Load(env(map[string]string{"CALLON_MODELS": "gpt 4", "CALLON_MAX_PROMPT": "5"})).Validate(0)
	for _, v := range []string{"CALLON_MODELS", "CALLON_MAX_PROMPT"} {
		if err == nil || !strings.Contains(err.Error(), v) {
			t.Errorf("got %v, want an error naming %s", err, v)
		}
	}
	if s := c.String(); !strings.Contains(s, "models=llama3,gpt-4.1,claude-sonnet") || !strings.Contains(s, "max_prompt=8000") {
		t.Errorf("String() = %s, want the models and the prompt limit", s)
	}
}

const mcpRolesYAML = `
mcp_servers:
  everything:
    command: ["node", "/opt/mcp/${MCP_DIR}/index.js", "stdio", "^a$b"]
    env: {SOME_KEY: "${SOME_KEY}", PLAIN: plain}
  search:
    url: "https://${SEARCH_HOST}/mcp"
    headers: {Authorization: "Bearer ${SEARCH_TOKEN}"}
    approval: required
  files-2:
    command: [files]
    approval: [write, delete]
roles:
  - name: researcher
    description: Finds facts
    prompt: You research.
    tools: [fetch_url, everything.echo, search.*, fetch_url]
guilds:
  "1":
    channels:
      "2":
        roles:
          - {name: clerk, description: Files, prompt: You file., tools: [files-2.write]}
`

func TestParseRolesFileMCPServers(t *testing.T) {
	t.Parallel()
	rf, err := config.ParseRolesFile([]byte(mcpRolesYAML), env(map[string]string{
		"MCP_DIR": "everything", "SOME_KEY": "k3y", "SEARCH_HOST": "mcp.example.com", "SEARCH_TOKEN": "s3cret",
	}))
	if err != nil {
		t.Fatalf("ParseRolesFile: %v", err)
	}
	want := []config.MCPServer{
		{Name: "everything", Command: []string{"node", "/opt/mcp/everything/index.js", "stdio", "^a$b"},
			Env: map[string]string{"SOME_KEY": "k3y", "PLAIN": "plain"}, Guilds: config.GuildGrant{Implicit: true}, ReadsPrivate: config.ToolMark{All: true}},
		{Name: "files-2", Command: []string{"files"}, Approval: config.MCPApproval{Tools: []string{"write", "delete"}}, Guilds: config.GuildGrant{Implicit: true}, ReadsPrivate: config.ToolMark{All: true}},
		{Name: "search", URL: "https://mcp.example.com/mcp", Guilds: config.GuildGrant{Implicit: true}, ReadsPrivate: config.ToolMark{All: true},
			Headers: map[string]string{"Authorization": "Bearer s3cret"}, Approval: config.MCPApproval{All: true}},
	}
	if !reflect.DeepEqual(rf.MCPServers, want) {
		t.Errorf("got servers\n%+v\nwant\n%+v", rf.MCPServers, want)
	}
	if got, want := rf.Rosters[0].Roles[0].Tools, []string{"fetch_url", "everything.echo", "search.*"}; !slices.Equal(got, want) {
		t.Errorf("got researcher tools %q, want %q (duplicates dropped)", got, want)
	}
	if got, want := rf.Rosters[1].Roles[0].Tools, []string{"files-2.write"}; !slices.Equal(got, want) {
		t.Errorf("got clerk tools %q, want %q", got, want)
	}

	var buf strings.Builder
	slog.New(slog.NewTextHandler(&buf, nil)).Info("servers", "search", rf.MCPServers[2], "everything", rf.MCPServers[0])
	if strings.Contains(buf.String(), "s3cret") || strings.Contains(buf.String(), "k3y") || !strings.Contains(buf.String(), "Authorization") {
		t.Errorf("logged %s, want header and env names without their values", buf.String())
	}

	// ParseRoles reads the same file without an environment.
	rosters, err := config.ParseRoles([]byte(mcpRolesYAML))
	if err != nil || len(rosters) != 2 {
		t.Errorf("ParseRoles: got %d rosters, %v; want 2, nil", len(rosters), err)
	}
}

func TestParseRolesFileMCPErrors(t *testing.T) {
	t.Parallel()
	const role = "roles: [{name: r, description: d, prompt: p}]\n"
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"bad name", "mcp_servers:\n  Search:\n    url: https://x\n" + role, []string{"mcp_servers.Search", "a-z, 0-9"}},
		{"long name", "mcp_servers:\n  " + strings.Repeat("a", 33) + ":\n    url: https://x\n" + role, []string{"1 to 32"}},
		{"both", "mcp_servers:\n  s:\n    url: https://x\n    command: [x]\n" + role, []string{"mcp_servers.s", "not both"}},
		{"neither", "mcp_servers:\n  s: {approval: required}\n" + role, []string{"mcp_servers.s", "needs a command"}},
		{"env on url", "mcp_servers:\n  s: {url: https://x, env: {A: b}}\n" + role, []string{"env is for command servers"}},
		{"headers on command", "mcp_servers:\n  s: {command: [x], headers: {A: b}}\n" + role, []string{"headers are for url servers"}},
		{"bad url", "mcp_servers:\n  s: {url: \"ftp://x\"}\n" + role, []string{"mcp_servers.s", "url: must be an http"}},
		{"unset var", "mcp_servers:\n  s: {url: https://x, headers: {Authorization: \"Bearer ${NOPE}\"}}\n" + role,
			[]string{"mcp_servers.s", "headers.Authorization", "${NOPE}", "not set"}},
		{"bad var", "mcp_servers:\n  s: {command: [\"${1X}\"]}\n" + role, []string{"command[0]", "${1X}"}},
		{"unterminated var", "mcp_servers:\n  s: {command: [x, \"${X\"]}\n" + role, []string{"command[1]", "unterminated"}},
		{"bad env name", "mcp_servers:\n  s: {command: [x], env: {\"A-B\": c}}\n" + role, []string{"env", `"A-B"`}},
		{"bad header name", "mcp_servers:\n  s: {url: https://x, headers: {\"A B\": c}}\n" + role, []string{"headers", `"A B"`}},
		{"bad approval", "mcp_servers:\n  s: {command: [x], approval: always}\n" + role, []string{"approval", "required"}},
		{"bad approval tool", "mcp_servers:\n  s: {command: [x], approval: [\"a b\"]}\n" + role, []string{"approval", `"a b"`}},
		{"unknown server field", "mcp_servers:\n  s: {command: [x], cmd: [y]}\n" + role, []string{"cmd"}},
		{"unknown server", "mcp_servers:\n  s: {command: [x]}\nroles: [{name: r, description: d, prompt: p, tools: [search.find]}]\n",
			[]string{"default roles", `role "r"`, `"search.find"`, `no MCP server "search"`}},
		{"no servers", "guilds:\n  \"1\":\n    roles: [{name: r, description: d, prompt: p, tools: [s.*]}]\n",
			[]string{"guild 1", `role "r"`, `"s.*"`, `no MCP server "s"`}},
		{"unknown built-in", "roles: [{name: r, description: d, prompt: p, tools: [fetch]}]\n", []string{`role "r"`, `"fetch"`, "fetch_url"}},
		{"bad tool", "mcp_servers:\n  s: {command: [x]}\nroles: [{name: r, description: d, prompt: p, tools: [\"s.a b\"]}]\n",
			[]string{`role "r"`, `"a b" is not a tool name`}},
	}
	for _, tc := range tests {
		_, err := config.ParseRolesFile([]byte(tc.yaml), env(map[string]string{"X": "x"}))
		if err == nil {
			t.Errorf("%s: got nil error, want one", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: got %q, want it to contain %q", tc.name, err, w)
			}
		}
	}
}

func TestLoadRolesFileMCPServers(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "roles.yaml")
	if err := os.WriteFile(path, []byte(mcpRolesYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"CALLON_ROLES_FILE": path, "MCP_DIR": "e", "SOME_KEY": "k", "SEARCH_HOST": "h.example", "SEARCH_TOKEN": "t"}
	c := config.Load(env(vars))
	if err := c.Validate(0); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if len(c.MCPServers) != 3 || c.MCPServers[2].Headers["Authorization"] != "Bearer t" {
		t.Errorf("got servers %+v, want 3 with search's header expanded from the environment", c.MCPServers)
	}

	delete(vars, "SEARCH_TOKEN")
	err := config.Load(env(vars)).Validate(0)
	for _, w := range []string{"CALLON_ROLES_FILE", path, "mcp_servers.search", "${SEARCH_TOKEN}"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("got %v, want an error containing %q", err, w)
		}
	}
}
