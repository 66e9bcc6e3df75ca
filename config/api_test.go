package config_test

import (
	"strings"
	"testing"

	"github.com/callonbot/callon/config"
)

func TestAPIConfig(t *testing.T) {
	t.Parallel()
	c := config.Load(env(nil))
	if c.API.Enabled() || c.API.Rate != config.DefaultAPIRate {
		t.Errorf("API = %+v, want off at %d requests a minute", c.API, config.DefaultAPIRate)
	}
	const secret = "a-long-api-secret-hunter2"
	c = config.Load(env(map[string]string{"CALLON_API_SECRET": secret, "CALLON_HTTP_ADDR": ":8080", "CALLON_API_RATE": "30"}))
	if err := c.Validate(0); err != nil {
		t.Fatal(err)
	}
	if !c.API.Enabled() || c.API.Secret != secret || c.API.Rate != 30 {
		t.Errorf("API = %+v", c.API)
	}
	if s := c.String(); strings.Contains(s, "hunter2") || !strings.Contains(s, "api_secret=(set)") {
		t.Errorf("String() = %s, want the secret redacted", s)
	}
	for _, e := range []map[string]string{
		{"CALLON_API_SECRET": secret},                               // no CALLON_HTTP_ADDR
		{"CALLON_API_SECRET": "short", "CALLON_HTTP_ADDR": ":8080"}, // too short to be a key
		{"CALLON_API_RATE": "0", "CALLON_HTTP_ADDR": ":8080"},       // out of range
	} {
		var name string
		for k := range e {
			if k != "CALLON_HTTP_ADDR" {
				name = k
			}
		}
		err := config.Load(env(e)).Validate(0)
		if err == nil || !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%v: Validate() = %v, want an error naming %s without the secret", e, err, name)
		}
	}
}
