package config_test

import (
	"os"
	"path/filepath"
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
		{"syntax", "roles: [", []string{"invalid YAML"}},
		{"unknown field", "roles:\n  - name: a\n    descripton: typo\n", []string{"line 3", "descripton"}},
		{"empty", "", []string{"defines no roles"}},
		{"bad guild id", "guilds:\n  marketing:\n    roles: [{name: a, description: d, prompt: p}]\n", []string{`guild "marketing"`, "numeric Discord id"}},
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
