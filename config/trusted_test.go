package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/callonbot/callon/config"
)

func TestTrustedBots(t *testing.T) {
	t.Parallel()
	if c := config.Load(env(nil)); len(c.HandBack.TrustedBots) != 0 || len(c.GuildTrustedBots) != 0 {
		t.Errorf("got trusted bots %v, %v by default, want none", c.HandBack.TrustedBots, c.GuildTrustedBots)
	}
	c := config.Load(env(map[string]string{"CALLON_TRUSTED_BOTS": " 111, 222 ,"}))
	if err := c.Validate(0); err != nil || !slices.Equal(c.HandBack.TrustedBots, []string{"111", "222"}) {
		t.Errorf("got %v, %v; want [111 222]", c.HandBack.TrustedBots, err)
	}
	c = config.Load(env(map[string]string{"CALLON_TRUSTED_BOTS": "111,dispatcher"}))
	if err := c.Validate(0); err == nil || !strings.Contains(err.Error(), "CALLON_TRUSTED_BOTS") {
		t.Errorf("a name among the ids: got %v, want an error naming CALLON_TRUSTED_BOTS", err)
	}

	dir := t.TempDir()
	file := filepath.Join(dir, "roles.yaml")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("guilds:\n  \"1\":\n    trusted_bots: [\"333\", \"444\"]\n")
	c = config.Load(env(map[string]string{"CALLON_ROLES_FILE": file}))
	if err := c.Validate(0); err != nil || !slices.Equal(c.GuildTrustedBots["1"], []string{"333", "444"}) {
		t.Errorf("roles file trusted_bots: got %v, %v", c.GuildTrustedBots, err)
	}
	write("guilds:\n  \"1\":\n    trusted_bots: [dispatcher]\n")
	c = config.Load(env(map[string]string{"CALLON_ROLES_FILE": file}))
	if err := c.Validate(0); err == nil || !strings.Contains(err.Error(), `trusted_bots: "dispatcher" is not a numeric Discord id`) {
		t.Errorf("a name in trusted_bots: got %v", err)
	}
}
