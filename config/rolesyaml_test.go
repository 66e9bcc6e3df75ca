package config_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/callonbot/callon/config"
)

// A roles file with many mistakes gets them all in one report, each at
// its line, in the file's words, and never a Go type.
func TestRolesFileReportsEveryProblem(t *testing.T) {
	t.Parallel()
	yaml := `mcp_servers:
  notes:
    command: [npx, server]
    aproval: required
roles:
  - name: researcher
    descripton: Finds facts
    prompt: You research.
    max_tokens: lots
  - name: writer
    description: Writes
    prompt: You write.
    tools: [search.find]
    timeout: soon
guilds:
  marketing:
    roles: [{name: a, description: d, prompt: p}]
  "111":
    roles: {name: b}
    channels:
      "222":
        roles:
          - name: c
            description: d
            prompt: p
            tools: notes.read
`
	_, err := config.ParseRolesFile([]byte(yaml), func(string) string { return "" })
	var rfe *config.RolesFileError
	if !errors.As(err, &rfe) {
		t.Fatalf("ParseRolesFile = %v; want a *RolesFileError", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"problems:",
		`line 4: mcp_servers.notes: unknown key "aproval" (did you mean "approval"?): an MCP server takes command, env, url, headers, approval`,
		`line 7: roles[1]: unknown key "descripton" (did you mean "description"?): a role takes name, description, prompt`,
		`line 9: roles[1].max_tokens: want a whole number, got "lots"`,
		`line 10: default roles: role "writer": tools: "search.find": no MCP server "search" in mcp_servers`,
		`line 16: guilds: "marketing" is not a numeric Discord id`,
		`line 19: guilds.111.roles: want a list`,
		`line 26: guilds.111.channels.222.roles[1].tools: want a list`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the report lacks %q:\n%s", want, msg)
		}
	}
	// The problems come in the order of their lines.
	lines := regexp.MustCompile(`(?m)^line (\d+):`).FindAllStringSubmatch(msg, -1)
	if len(lines) < 8 {
		t.Errorf("found %d problems, want every one:\n%s", len(lines), msg)
	}
	for _, bad := range []string{"config.", "YAML struct", "[]string", "float32", "!!", "unmarshal"} {
		if strings.Contains(msg, bad) {
			t.Errorf("the report shows %q, Go's words rather than the file's:\n%s", bad, msg)
		}
	}
}

func TestRolesFileShapes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml, want string }{
		{"a role that is not a mapping", "roles: [researcher]\n",
			`line 1: roles[1]: want a role (keys such as name, description, prompt, model, temperature, max_tokens, timeout, tools, avatar), got "researcher"`},
		{"a key twice", "roles:\n  - name: a\n    name: b\n", `line 3: roles[1]: key "name" is given twice (first at line 2)`},
		{"a number that is not one", "roles:\n  - {name: a, description: d, prompt: p, temperature: hot}\n", `roles[1].temperature: want a number, got "hot"`},
		{"an unknown top-level key", "role:\n  - name: a\n", `line 1: unknown key "role" (did you mean "roles"?): the roles file takes providers, mcp_servers, roles, guilds`},
		{"a tab", "roles:\n\t- name: a\n", "line 2: not valid YAML: found character that cannot start any token"},
		{"approval of the wrong kind", "mcp_servers:\n  s: {command: [x], approval: {all: true}}\n", "mcp_servers.s.approval: want `required` or a list of tool names"},
		{"an unknown provider key", "providers:\n  local: {base_url: http://x/v1, key: k}\n", `line 2: providers.local: unknown key "key": a provider takes base_url, api_key_env, headers`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.ParseRolesFile([]byte(tc.yaml), func(string) string { return "x" })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
			}
		})
	}
}
