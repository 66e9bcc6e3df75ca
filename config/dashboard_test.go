package config_test

import (
	"strings"
	"testing"

	"github.com/callonbot/callon/config"
)

func TestDashboardConfig(t *testing.T) {
	t.Parallel()
	if c := config.Load(env(nil)); c.Dashboard.Enabled() {
		t.Errorf("Dashboard = %+v, want off", c.Dashboard)
	}
	const token, secret = "a-long-dashboard-token-hunter2", "client-secret-hunter3"
	c := config.Load(env(map[string]string{"CALLON_DASHBOARD_TOKEN": token, "CALLON_HTTP_ADDR": ":8080",
		"DISCORD_CLIENT_SECRET": secret, "DISCORD_APP_ID": "123", "CALLON_DASHBOARD_REDIRECT_URL": "https://callon.example/dashboard/auth/callback"}))
	if err := c.Validate(0); err != nil {
		t.Fatal(err)
	}
	if !c.Dashboard.Enabled() || !c.Dashboard.OAuth() || c.Dashboard.Token != token {
		t.Errorf("Dashboard = %+v", c.Dashboard)
	}
	if s := c.String(); strings.Contains(s, "hunter") || !strings.Contains(s, "dashboard_token=(set)") || !strings.Contains(s, "discord_client_secret=(set)") {
		t.Errorf("String() = %s, want the secrets redacted", s)
	}
	for _, e := range []map[string]string{
		{"CALLON_DASHBOARD_TOKEN": token},                                // no CALLON_HTTP_ADDR
		{"CALLON_DASHBOARD_TOKEN": "short", "CALLON_HTTP_ADDR": ":8080"}, // too short
		{"DISCORD_CLIENT_SECRET": secret, "CALLON_HTTP_ADDR": ":8080", "CALLON_DASHBOARD_REDIRECT_URL": "https://x.example/dashboard/auth/callback"}, // no DISCORD_APP_ID
		{"DISCORD_CLIENT_SECRET": secret, "CALLON_HTTP_ADDR": ":8080", "DISCORD_APP_ID": "1"},                                                        // no redirect
		{"DISCORD_CLIENT_SECRET": secret, "CALLON_HTTP_ADDR": ":8080", "DISCORD_APP_ID": "1", "CALLON_DASHBOARD_REDIRECT_URL": "https://x.example/elsewhere"},
	} {
		err := config.Load(env(e)).Validate(0)
		if err == nil || strings.Contains(err.Error(), "hunter") {
			t.Errorf("%v: Validate() = %v, want an error without the secret", e, err)
		}
	}
}
