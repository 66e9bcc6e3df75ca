package discordfake_test

import (
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/bot/discordfake"
)

// The fake runs outside a test: what it refuses, and a wait that times
// out, come back as errors; Close stops it.
func TestTheFakeReturnsErrors(t *testing.T) {
	t.Parallel()
	s, err := discordfake.Start(discordfake.WithWaitTimeout(50 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Errorf("URL %q, want a loopback address", s.URL())
	}
	if _, err := s.SlashCommand(discordfake.SlashCommand{Name: "callon", ChannelID: "404"}); err == nil || !strings.Contains(err.Error(), "unknown channel") {
		t.Errorf("a command in no channel: %v, want refused", err)
	}
	if _, err := s.SlashCommand(discordfake.SlashCommand{Name: "nothing", ChannelID: s.ChannelID("general")}); err == nil ||
		!strings.Contains(err.Error(), "not registered") {
		t.Errorf("an unregistered command: %v, want refused", err)
	}
	if err := s.WaitConnected(); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("WaitConnected with no bot: %v, want a timeout", err)
	}
}
