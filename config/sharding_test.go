package config_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/callonbot/callon/config"
)

func TestSharding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		count, ids string
		want       config.Sharding
		problem    string // in Validate's error; "" for none
	}{
		{"", "", config.Sharding{Count: 1}, ""},
		{"auto", "", config.Sharding{Count: 0}, ""},
		{" AUTO ", "3", config.Sharding{Count: 0, IDs: []int{3}}, ""},
		{"4", "", config.Sharding{Count: 4}, ""},
		{"8", "6, 0-2,1", config.Sharding{Count: 8, IDs: []int{0, 1, 2, 6}}, ""},
		{"2", "2", config.Sharding{Count: 2}, "DISCORD_SHARD_IDS: shard 2 is not below DISCORD_SHARD_COUNT (2)"},
		{"4", "3-1", config.Sharding{Count: 4}, `DISCORD_SHARD_IDS: range "3-1" runs backwards`},
		{"4", "one", config.Sharding{Count: 4}, `DISCORD_SHARD_IDS: "one" is not a shard id`},
		{"4", "-1", config.Sharding{Count: 4}, `DISCORD_SHARD_IDS: "" is not a shard id`},
		{"0", "", config.Sharding{Count: 1}, "DISCORD_SHARD_COUNT: must be a whole number from 1"},
		{"many", "", config.Sharding{Count: 1}, "DISCORD_SHARD_COUNT:"},
	}
	for _, tc := range tests {
		c := config.Load(env(map[string]string{"DISCORD_SHARD_COUNT": tc.count, "DISCORD_SHARD_IDS": tc.ids}))
		err := c.Validate(0)
		switch {
		case tc.problem == "" && err != nil:
			t.Errorf("count %q, ids %q: Validate() = %v, want nil", tc.count, tc.ids, err)
		case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
			t.Errorf("count %q, ids %q: Validate() = %v, want %q", tc.count, tc.ids, err, tc.problem)
		}
		if c.Sharding.Count != tc.want.Count || !slices.Equal(c.Sharding.IDs, tc.want.IDs) {
			t.Errorf("count %q, ids %q: got %+v, want %+v", tc.count, tc.ids, c.Sharding, tc.want)
		}
	}
}

// The configuration logs as fields, in JSON as an object, secrets
// redacted.
func TestConfigLogsAsFields(t *testing.T) {
	t.Parallel()
	c := config.Load(env(map[string]string{
		"DISCORD_TOKEN":       "discord-secret-token",
		"OPENAI_API_KEY":      "sk-secret-key",
		"DATABASE_URL":        "postgres://callon:db-secret-pw@db:5432/callon",
		"DISCORD_SHARD_COUNT": "4",
		"DISCORD_SHARD_IDS":   "0,1",
	}))
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("starting", "config", c)
	var line struct {
		Config map[string]any `json:"config"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, buf.String())
	}
	for k, want := range map[string]any{
		"discord_token":  "(set)",
		"openai_api_key": "(set)",
		"database_url":   "postgres://callon:xxxxx@db:5432/callon",
		"discord_shards": "4 (this process: 0,1)",
		"max_rounds":     float64(config.DefaultMaxRounds),
		"webhook_secret": "(unset)",
	} {
		if got := line.Config[k]; got != want {
			t.Errorf("config.%s = %v, want %v", k, got, want)
		}
	}
	for _, secret := range []string{"discord-secret-token", "sk-secret-key", "db-secret-pw"} {
		if strings.Contains(buf.String(), secret) {
			t.Errorf("the log line holds %q:\n%s", secret, buf.String())
		}
	}
}

func TestHTTPAddr(t *testing.T) {
	t.Parallel()
	for addr, ok := range map[string]bool{"": true, ":8080": true, "127.0.0.1:9090": true, "[::]:80": true, "8080": false, "host:": false} {
		c := config.Load(env(map[string]string{"CALLON_HTTP_ADDR": addr}))
		if err := c.Validate(0); (err == nil) != ok {
			t.Errorf("CALLON_HTTP_ADDR=%q: Validate() = %v, want ok %v", addr, err, ok)
		}
	}
}
