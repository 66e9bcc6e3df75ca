package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/callonbot/callon/config"
)

func TestProviders(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "roles.yaml")
	os.WriteFile(file, []byte(`
providers:
  ollama:
    base_url: http://host.docker.internal:11434/v1/
  openrouter:
    base_url: https://openrouter.ai/api/v1
    api_key_env: OPENROUTER_KEY
    headers: {X-Title: "${APP_TITLE}"}
roles:
  - name: researcher
    description: Finds facts
    prompt: You research.
    model: openrouter/anthropic/claude-sonnet
`), 0o600)
	env := map[string]string{
		"CALLON_ROLES_FILE": file, "OPENROUTER_KEY": "sk-or", "APP_TITLE": "callon",
		"CALLON_PROVIDERS": "ollama=http://127.0.0.1:11434/v1, vllm=http://gpu:8000/v1", "CALLON_PROVIDER_VLLM_API_KEY": "sk-vllm",
		"CALLON_MODELS": "openrouter/anthropic/claude-sonnet",
	}
	c := config.Load(func(k string) string { return env[k] })
	if err := c.Validate(0); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range c.Providers {
		got = append(got, p.Name+"="+p.BaseURL+" key:"+p.APIKey+" title:"+p.Headers["X-Title"])
	}
	want := []string{
		"ollama=http://127.0.0.1:11434/v1 key: title:", // the environment's entry replaces the file's
		"openrouter=https://openrouter.ai/api/v1 key:sk-or title:callon",
		"vllm=http://gpu:8000/v1 key:sk-vllm title:",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("providers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if p, m := config.ProviderOf("openrouter/anthropic/claude-sonnet", c.Providers); p != "openrouter" || m != "anthropic/claude-sonnet" {
		t.Errorf("ProviderOf = %q, %q", p, m)
	}
	if p, m := config.ProviderOf("meta/llama", c.Providers); p != "" || m != "meta/llama" {
		t.Errorf("ProviderOf of a model on the default provider = %q, %q", p, m)
	}
	if strings.Contains(c.String(), "sk-or") || strings.Contains(c.String(), "sk-vllm") {
		t.Errorf("a provider's key is in the configuration's description: %s", c)
	}
}

func TestProviderErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ env, want string }{
		{"Local=http://x/v1", "provider name"},
		{"local", "want name=base_url"},
		{"local=ftp://x", "must be an http:// or https:// URL"},
	} {
		c := config.Load(func(k string) string { return map[string]string{"CALLON_PROVIDERS": tc.env}[k] })
		if err := c.Validate(0); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "CALLON_PROVIDERS") {
			t.Errorf("CALLON_PROVIDERS=%q: %v, want an error containing %q", tc.env, err, tc.want)
		}
	}
}

// TestToolDialect: auto by default but for OpenAI's API, set per provider
// in the roles file or the environment, anything else refused.
func TestToolDialect(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "roles.yaml")
	os.WriteFile(file, []byte(`
providers:
  ollama:
    base_url: http://127.0.0.1:11434/v1
  careful:
    base_url: http://127.0.0.1:8000/v1
    tool_dialect: strict
  proxy:
    base_url: https://api.openai.com/v1
`), 0o600)
	env := map[string]string{
		"CALLON_ROLES_FILE": file, "CALLON_PROVIDERS": "vllm=http://gpu:8000/v1,oai=https://api.openai.com/v1",
		"CALLON_PROVIDER_OAI_TOOL_DIALECT": "auto", "OPENAI_BASE_URL": "http://127.0.0.1:11434/v1",
	}
	c := config.Load(func(k string) string { return env[k] })
	if err := c.Validate(0); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range c.Providers {
		got = append(got, p.Name+"="+p.ToolDialect)
	}
	if want := "careful=strict,oai=auto,ollama=auto,proxy=strict,vllm=auto"; strings.Join(got, ",") != want {
		t.Errorf("dialects = %s, want %s", strings.Join(got, ","), want)
	}
	if c.ToolDialect != "auto" {
		t.Errorf("CALLON_TOOL_DIALECT default for a local server = %q, want auto", c.ToolDialect)
	}
	if d := config.Load(func(string) string { return "" }).ToolDialect; d != "strict" {
		t.Errorf("CALLON_TOOL_DIALECT default for OpenAI = %q, want strict", d)
	}
	bad := config.Load(func(k string) string { return map[string]string{"CALLON_TOOL_DIALECT": "loose"}[k] })
	if err := bad.Validate(0); err == nil || !strings.Contains(err.Error(), "CALLON_TOOL_DIALECT") {
		t.Errorf("Validate = %v, want CALLON_TOOL_DIALECT refused", err)
	}
	os.WriteFile(file, []byte(`
providers:
  sloppy:
    base_url: http://127.0.0.1:9000/v1
    tool_dialect: sometimes
`), 0o600)
	err := config.Load(func(k string) string { return env[k] }).Validate(0)
	if err == nil || !strings.Contains(err.Error(), `line 3: providers.sloppy: tool_dialect: must be auto or strict, got "sometimes"`) {
		t.Errorf("Validate = %v, want the bad tool_dialect named", err)
	}
}

// TestMasterPromptFile: the file's text, trimmed; a missing, empty or
// oversized file is refused by name.
func TestMasterPromptFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o600)
		return p
	}
	load := func(path string) config.Config {
		return config.Load(func(k string) string { return map[string]string{"CALLON_MASTER_PROMPT_FILE": path}[k] })
	}
	if c := load(write("good.txt", "\n  Answer in haiku.\n")); c.Validate(0) != nil || c.MasterPrompt != "Answer in haiku." {
		t.Errorf("MasterPrompt = %q (%v), want the file's text", c.MasterPrompt, c.Validate(0))
	}
	for name, path := range map[string]string{
		"missing": filepath.Join(dir, "nope.txt"), "empty": write("empty.txt", " \n"),
		"too large": write("big.txt", strings.Repeat("x", config.MaxMasterPrompt+1)),
	} {
		if err := load(path).Validate(0); err == nil || !strings.Contains(err.Error(), "CALLON_MASTER_PROMPT_FILE") {
			t.Errorf("%s file: Validate = %v, want CALLON_MASTER_PROMPT_FILE refused", name, err)
		}
	}
}
