package config_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/config"
)

func TestCaps(t *testing.T) {
	t.Parallel()
	c := config.Load(env(nil))
	if got := c.Caps; got.MaxUserSessions != config.DefaultMaxUserSessions || got.MaxQueuedTurns != 5 ||
		got.UserTurnsPerMinute != config.DefaultUserTurnsPerMinute || got.GuildDailyTokens != 0 ||
		got.Retention != config.DefaultRetention || got.Prices != nil || got.SessionIdle != 7*24*time.Hour {
		t.Errorf("default caps = %+v", got)
	}
	c = config.Load(env(map[string]string{
		"CALLON_MAX_USER_SESSIONS": "2", "CALLON_GUILD_DAILY_TOKENS": "1_000_000", "CALLON_MAX_QUEUED_TURNS": "3",
		"CALLON_USER_TURNS_PER_MINUTE": "0", "CALLON_RETENTION": "0", "CALLON_SESSION_IDLE": "0",
		"CALLON_PRICES": "gpt-4o=2.5/10, gpt-4o-mini = 0.15/0.6,meta-llama/Llama-3-70b=0/0",
	}))
	if err := c.Validate(0); err != nil {
		t.Fatalf("Validate() = %v", err)
	}
	want := map[string]config.Price{"gpt-4o": {2.5, 10}, "gpt-4o-mini": {0.15, 0.6}, "meta-llama/Llama-3-70b": {0, 0}}
	if got := c.Caps; got.MaxUserSessions != 2 || got.GuildDailyTokens != 1_000_000 || got.MaxQueuedTurns != 3 ||
		got.UserTurnsPerMinute != 0 || got.Retention != 0 || got.SessionIdle != 0 || fmt.Sprint(got.Prices) != fmt.Sprint(want) {
		t.Errorf("caps = %+v, want the environment's", got)
	}
	if !strings.Contains(c.String(), "prices=gpt-4o=2.5/10,gpt-4o-mini=0.15/0.6") {
		t.Errorf("String() = %s, want the prices", c)
	}
	bad := config.Load(env(map[string]string{"CALLON_PRICES": "gpt-4o=2.5,x=-1/2", "CALLON_RETENTION": "1ms", "CALLON_MAX_QUEUED_TURNS": "0",
		"CALLON_SESSION_IDLE": "a week"}))
	err := bad.Validate(0)
	for _, want := range []string{`CALLON_PRICES: must be model=in/out entries separated by commas, in US dollars per million tokens (such as gpt-4o=2.5/10), got "gpt-4o=2.5"`,
		`got "x=-1/2"`, "CALLON_RETENTION:", "CALLON_MAX_QUEUED_TURNS:", "CALLON_SESSION_IDLE:"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %s", err, want)
		}
	}
}
