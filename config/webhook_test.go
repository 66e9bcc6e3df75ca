package config_test

import (
	"strings"
	"testing"

	"github.com/callonbot/callon/config"
)

func TestWebhookDefaults(t *testing.T) {
	t.Parallel()
	c := config.Load(env(nil))
	if c.Webhook.Enabled() || c.Webhook.Retries != config.DefaultWebhookRetries || config.DefaultWebhookRetries != 5 {
		t.Errorf("Webhook = %+v, want disabled with 5 retries", c.Webhook)
	}
	if !strings.Contains(c.String(), "webhook_url=(unset) webhook_secret=(unset) webhook_retries=5") {
		t.Errorf("String() = %s, want the webhook settings", c)
	}
}

func TestWebhookParse(t *testing.T) {
	t.Parallel()
	c := config.Load(env(map[string]string{
		"CALLON_WEBHOOK_URL":     " https://hooks.example.com/callon/ ",
		"CALLON_WEBHOOK_SECRET":  "k3y",
		"CALLON_WEBHOOK_RETRIES": "0",
	}))
	if err := c.Validate(0); err != nil {
		t.Fatal(err)
	}
	if w := c.Webhook; !w.Enabled() || w.URL != "https://hooks.example.com/callon/" || w.Secret != "k3y" || w.Retries != 0 {
		t.Errorf("Webhook = %+v", w)
	}
}

func TestWebhookErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env     map[string]string
		wantVar string
		secret  string // must not appear in the error
	}{
		{map[string]string{"CALLON_WEBHOOK_URL": "https://hooks.example.com/x"}, "CALLON_WEBHOOK_SECRET", ""},
		{map[string]string{"CALLON_WEBHOOK_URL": "https://hooks.example.com/x", "CALLON_WEBHOOK_SECRET": "  "}, "CALLON_WEBHOOK_SECRET", ""},
		{map[string]string{"CALLON_WEBHOOK_URL": "ftp://hooks.example.com/?token=hunter2", "CALLON_WEBHOOK_SECRET": "k"}, "CALLON_WEBHOOK_URL", "hunter2"},
		{map[string]string{"CALLON_WEBHOOK_URL": "hooks.example.com/hunter2", "CALLON_WEBHOOK_SECRET": "k"}, "CALLON_WEBHOOK_URL", "hunter2"},
		{map[string]string{"CALLON_WEBHOOK_RETRIES": "21"}, "CALLON_WEBHOOK_RETRIES", ""},
		{map[string]string{"CALLON_WEBHOOK_RETRIES": "-1"}, "CALLON_WEBHOOK_RETRIES", ""},
	}
	for _, c := range cases {
		err := config.Load(env(c.env)).Validate(0)
		if err == nil || !strings.Contains(err.Error(), c.wantVar) {
			t.Errorf("%v: Validate() = %v, want an error naming %s", c.env, err, c.wantVar)
			continue
		}
		if c.secret != "" && strings.Contains(err.Error(), c.secret) {
			t.Errorf("%v: error %q shows the URL", c.env, err)
		}
	}
}

func TestWebhookSecretsAreRedacted(t *testing.T) {
	t.Parallel()
	c := config.Load(env(map[string]string{
		"CALLON_WEBHOOK_URL":    "https://bob:pa55@hooks.example.com/callon?token=t0ken#frag",
		"CALLON_WEBHOOK_SECRET": "super-secret-key",
	}))
	if err := c.Validate(0); err != nil {
		t.Fatal(err)
	}
	s := c.String()
	for _, secret := range []string{"super-secret-key", "pa55", "bob", "t0ken"} {
		if strings.Contains(s, secret) {
			t.Errorf("String() shows %q: %s", secret, s)
		}
	}
	if !strings.Contains(s, "webhook_url=https://REDACTED@hooks.example.com/callon?token=REDACTED webhook_secret=(set)") {
		t.Errorf("String() = %s, want the URL's host and path, the rest redacted", s)
	}
}
