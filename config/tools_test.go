package config_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/config"
)

func TestToolsSettings(t *testing.T) {
	t.Parallel()
	c := config.Load(env(nil))
	if c.Tools.ApprovalTimeout != time.Hour || c.Tools.FetchAllow != nil {
		t.Errorf("defaults: got %+v, want a 1h approval timeout and nothing allowed", c.Tools)
	}
	c = config.Load(env(map[string]string{
		"CALLON_FETCH_ALLOW":      " wiki.internal., *.corp.example ,10.0.0.0/8, 127.0.0.1,[::1],,",
		"CALLON_APPROVAL_TIMEOUT": "90s",
		"PATH":                    "/usr/bin",
		"HOME":                    "/home/callon",
		"OPENAI_API_KEY":          "sk-secret",
	}))
	if err := c.Validate(0); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if want := []string{"wiki.internal", "*.corp.example", "10.0.0.0/8", "127.0.0.1", "[::1]"}; !slices.Equal(c.Tools.FetchAllow, want) {
		t.Errorf("FetchAllow = %q, want %q", c.Tools.FetchAllow, want)
	}
	if c.Tools.ApprovalTimeout != 90*time.Second {
		t.Errorf("ApprovalTimeout = %s, want 90s", c.Tools.ApprovalTimeout)
	}
	if want := []string{"PATH=/usr/bin", "HOME=/home/callon"}; !slices.Equal(c.Tools.Env, want) {
		t.Errorf("Env = %q, want PATH and HOME only, never the secrets", c.Tools.Env)
	}
	if s := c.String(); !strings.Contains(s, "approval_timeout=1m30s") || !strings.Contains(s, "fetch_allow=wiki.internal") {
		t.Errorf("String() = %s, want the tools settings", s)
	}

	bad := config.Load(env(map[string]string{"CALLON_FETCH_ALLOW": "ok.example, http://x/y, a b", "CALLON_APPROVAL_TIMEOUT": "0s"}))
	err := bad.Validate(0)
	for _, want := range []string{`CALLON_FETCH_ALLOW: "http://x/y"`, `CALLON_FETCH_ALLOW: "a b"`, "CALLON_APPROVAL_TIMEOUT"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %s", err, want)
		}
	}
}

// A roles file may declare only MCP servers, for roles set by command.
func TestRolesFileWithServersOnly(t *testing.T) {
	t.Parallel()
	rf, err := config.ParseRolesFile([]byte("mcp_servers:\n  files:\n    command: [mcp-files, /data]\n"), env(nil))
	if err != nil || len(rf.Rosters) != 0 || len(rf.MCPServers) != 1 || rf.MCPServers[0].Name != "files" {
		t.Errorf("ParseRolesFile = %+v, %v, want the server and no rosters", rf, err)
	}
	if _, err := config.ParseRolesFile([]byte("# nothing\n"), env(nil)); err == nil || !strings.Contains(err.Error(), "defines no roles") {
		t.Errorf("an empty file: got %v, want an error", err)
	}
}
