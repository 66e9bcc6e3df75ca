package config_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/config"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c := config.Load(env(nil))
	if err := c.Validate(0); err != nil {
		t.Fatalf("Validate() = %v, want nil for an empty environment", err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"DiscordAPIURL", c.DiscordAPIURL, "https://discord.com"},
		{"OpenAIBaseURL", c.OpenAIBaseURL, "https://api.openai.com/v1"},
		{"DatabaseURL", c.DatabaseURL, ""},
		{"MasterModel", c.MasterModel, config.DefaultMasterModel},
		{"WorkerModel", c.WorkerModel, config.DefaultWorkerModel},
		{"LogFormat", c.LogFormat, "text"},
		{"TaskLease", c.Limits.TaskLease, 30 * time.Second},
		{"Heartbeat", c.Limits.Heartbeat(), 10 * time.Second},
		{"SweepInterval", c.Limits.SweepInterval, 5 * time.Second},
		{"MaxRounds", c.Limits.MaxRounds, config.DefaultMaxRounds},
		{"MaxWorkers", c.Limits.MaxWorkers, config.DefaultMaxWorkers},
		{"TaskTimeout", c.Limits.TaskTimeout, config.DefaultTaskTimeout},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	c := config.Load(env(map[string]string{
		"DISCORD_TOKEN":       " tok ",
		"DISCORD_APP_ID":      "123",
		"DISCORD_GUILD_ID":    "456",
		"DISCORD_API_URL":     "http://127.0.0.1:9999/",
		"OPENAI_BASE_URL":     "http://localhost:11434/v1",
		"CALLON_MAX_ROUNDS":   "5",
		"CALLON_TASK_TIMEOUT": "90s",
		"CALLON_TASK_LEASE":   "1m",
		"LOG_LEVEL":           "DEBUG",
		"LOG_FORMAT":          "json",
	}))
	if err := c.Validate(config.NeedDiscord | config.NeedLLM); err != nil {
		t.Fatalf("Validate() = %v, want nil (a local OpenAI-compatible server needs no key)", err)
	}
	if c.DiscordToken != "tok" || c.DiscordAppID != "123" || c.DiscordGuild != "456" {
		t.Errorf("discord fields = %q %q %q, want tok 123 456", c.DiscordToken, c.DiscordAppID, c.DiscordGuild)
	}
	if c.DiscordAPIURL != "http://127.0.0.1:9999" {
		t.Errorf("DiscordAPIURL = %q, want the trailing slash trimmed", c.DiscordAPIURL)
	}
	if c.Limits.MaxRounds != 5 || c.Limits.TaskTimeout != 90*time.Second || c.Limits.Heartbeat() != 20*time.Second {
		t.Errorf("limits = %+v, want rounds 5, timeout 90s, heartbeat 20s", c.Limits)
	}
	if c.LogLevel.String() != "DEBUG" || c.LogFormat != "json" {
		t.Errorf("logging = %v %v, want DEBUG json", c.LogLevel, c.LogFormat)
	}
}

func TestValidateReportsEveryField(t *testing.T) {
	t.Parallel()
	c := config.Load(env(map[string]string{
		"DISCORD_APP_ID":        "not-a-number",
		"DISCORD_API_URL":       "ftp://x",
		"DATABASE_URL":          "mysql://u:hunter2@h/db",
		"CALLON_MAX_ROUNDS":     "0",
		"CALLON_TASK_TIMEOUT":   "soon",
		"CALLON_SWEEP_INTERVAL": "2m",
		"LOG_LEVEL":             "loud",
		"LOG_FORMAT":            "xml",
	}))
	err := c.Validate(config.NeedDiscord | config.NeedLLM)
	if err == nil {
		t.Fatal("Validate() = nil, want errors")
	}
	for _, v := range []string{"DISCORD_APP_ID", "DISCORD_API_URL", "DATABASE_URL", "CALLON_MAX_ROUNDS",
		"CALLON_TASK_TIMEOUT", "CALLON_SWEEP_INTERVAL", "LOG_LEVEL", "LOG_FORMAT", "DISCORD_TOKEN", "OPENAI_API_KEY"} {
		if !strings.Contains(err.Error(), v+":") {
			t.Errorf("Validate() error does not name %s:\n%v", v, err)
		}
	}
	var fe *config.FieldError
	if !errors.As(err, &fe) {
		t.Errorf("Validate() error is not a *FieldError: %T", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Validate() error leaks the database password:\n%v", err)
	}
}

func TestSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	c := config.Load(env(map[string]string{
		"DISCORD_TOKEN":  "discord-secret-token",
		"OPENAI_API_KEY": "sk-secret-key",
		"DATABASE_URL":   "postgres://callon:db-secret-pw@db:5432/callon",
	}))
	for _, s := range []string{c.String(), fmt.Sprint(c), fmt.Sprintf("%v %+v %+v", c, c.LogValue(), c.Summary())} {
		for _, secret := range []string{"discord-secret-token", "sk-secret-key", "db-secret-pw"} {
			if strings.Contains(s, secret) {
				t.Errorf("printed config contains %q:\n%s", secret, s)
			}
		}
	}
	if !strings.Contains(c.String(), "postgres://callon:xxxxx@db:5432/callon") {
		t.Errorf("String() = %s, want the database URL with its password redacted", c)
	}
}
