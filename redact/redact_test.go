package redact_test

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/callonbot/callon/redact"
)

func TestURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"https://api.example.com/v1", "https://api.example.com/v1"},
		{"https://user:hunter2@api.example.com/v1", "https://REDACTED@api.example.com/v1"},
		{"https://tok3n@api.example.com/v1", "https://REDACTED@api.example.com/v1"},
		{"https://mcp.example.com/mcp?token=abc&x=1#frag", "https://mcp.example.com/mcp?token=REDACTED&x=REDACTED"},
		{"not a url at all", redact.Mask},
		{"", ""},
	} {
		if got := redact.URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Every shape of secret the boundaries meet is masked in free text,
// whatever surrounds it; what is not a secret stays.
func TestText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		known []string
		gone  []string // must not remain
		stays []string // must remain
	}{
		{in: `calling "https://mcp.example.com/mcp?token=SECRET1": connection refused`, gone: []string{"SECRET1"},
			stays: []string{"https://mcp.example.com/mcp?token=", "connection refused"}},
		{in: `Post "http://bob:SECRET2@10.0.0.1:8080/v1/chat/completions": dial tcp`, gone: []string{"SECRET2"}, stays: []string{"10.0.0.1:8080"}},
		{in: "secret whsec_c2VjcmV0IHNlY3JldA== leaked", gone: []string{"c2VjcmV0IHNlY3JldA"}, stays: []string{"whsec_" + redact.Mask}},
		{in: "key sk-proj-ABCDEFGH12345678 rejected", gone: []string{"ABCDEFGH12345678"}},
		{in: "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.x.y", gone: []string{"eyJhbGciOiJIUzI1NiJ9"}},
		{in: `api_key=SECRET3&x=1, "password": "SECRET4", X-Api-Key: SECRET5`, gone: []string{"SECRET3", "SECRET4", "SECRET5"}},
		{in: "the server said: my-own-SECRET6 is wrong", known: []string{"my-own-SECRET6"}, gone: []string{"SECRET6"}},
		{in: "team budget of 1,000 tokens spent (300 used); max_tokens=50", stays: []string{"team budget of 1,000 tokens spent (300 used); max_tokens=50"}},
	} {
		got := redact.Text(tc.in, tc.known...)
		for _, g := range tc.gone {
			if strings.Contains(got, g) {
				t.Errorf("Text(%q) = %q: %q remains", tc.in, got, g)
			}
		}
		for _, s := range tc.stays {
			if !strings.Contains(got, s) {
				t.Errorf("Text(%q) = %q, want %q kept", tc.in, got, s)
			}
		}
	}
}

func TestError(t *testing.T) {
	t.Parallel()
	base := &net.OpError{Op: "dial", Err: errors.New("refused")}
	err := redact.Error(fmt.Errorf("get https://x.example/?token=SECRET: %w", base))
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("Error = %q", err)
	}
	var op *net.OpError
	if !errors.As(err, &op) {
		t.Error("the redacted error hides its cause from errors.As")
	}
	plain := errors.New("nothing to hide")
	if redact.Error(plain) != plain || redact.Error(nil) != nil {
		t.Error("an error without secrets is not returned as it is")
	}
}
