package discordtest_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/bot/discordtest"
)

func TestRateLimitIsWaitedOut(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s, err := bot.NewSession(dc.Token(), dc.URL(), allIntents) // REST only
	if err != nil {
		t.Fatal(err)
	}
	dc.RateLimit(discordtest.RouteCreateMessage, 1, 200*time.Millisecond)

	start := time.Now()
	if _, err := s.ChannelMessageSend(dc.ChannelID("general"), "patience"); err != nil {
		t.Fatalf("send: %v", err)
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("took %v, want discordgo to wait retry_after", took)
	}
	if got := dc.Calls(discordtest.RouteCreateMessage); got != 2 {
		t.Errorf("got %d calls, want a 429 and a retry", got)
	}
	if got := len(dc.Messages(dc.ChannelID("general"))); got != 1 {
		t.Errorf("got %d messages, want 1", got)
	}
}

func TestInjectedFaults(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s, err := bot.NewSession(dc.Token(), dc.URL(), allIntents)
	if err != nil {
		t.Fatal(err)
	}
	general := dc.ChannelID("general")

	dc.Fail(discordtest.RouteCreateMessage, 1, http.StatusInternalServerError)
	if _, err := s.ChannelMessageSend(general, "a"); restStatus(err) != 500 {
		t.Errorf("got %v, want a 500 error", err)
	}
	dc.Fail(discordtest.RouteCreateMessage, 1, http.StatusForbidden)
	if _, err := s.ChannelMessageSend(general, "b"); restCode(err) != 50013 {
		t.Errorf("got %v, want 50013", err)
	}
	dc.Fail(discordtest.RouteCreateMessage, 1, http.StatusBadGateway)
	if _, err := s.ChannelMessageSend(general, "c"); err != nil {
		t.Errorf("got %v, want discordgo to retry the 502", err)
	}
	if got := dc.Calls(discordtest.RouteCreateMessage); got != 4 {
		t.Errorf("got %d calls, want 4", got)
	}
	if msgs := dc.Messages(general); len(msgs) != 1 || msgs[0].Content != "c" {
		t.Errorf("got %+v, want only c", msgs)
	}
}

func TestUnknownRoutesAndHeaders(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s, err := bot.NewSession(dc.Token(), dc.URL(), allIntents)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ChannelMessagesPinned(dc.ChannelID("general")); restStatus(err) != 404 {
		t.Errorf("got %v, want 404", err)
	}
	if got := dc.UnknownCalls(); len(got) != 1 || got[0] != "GET /api/v9/channels/"+dc.ChannelID("general")+"/pins" {
		t.Errorf("got unknown calls %v, want the pins call", got)
	}

	req, _ := http.NewRequest("GET", dc.URL()+"/api/v9/users/@me", nil)
	req.Header.Set("Authorization", "Bot "+dc.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var me struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&me); err != nil || me.ID != dc.BotUserID() {
		t.Errorf("got %+v, %v; want the bot user", me, err)
	}
	for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-RateLimit-Reset-After", "X-RateLimit-Bucket"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("no %s header", h)
		}
	}
}

// Down fails every call of a route until ClearFaults; FailAfter carries a
// call out and answers an error all the same.
func TestOutageAndLostAnswers(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s, err := bot.NewSession(dc.Token(), dc.URL(), allIntents)
	if err != nil {
		t.Fatal(err)
	}
	general := dc.ChannelID("general")
	dc.Down(discordtest.RouteCreateMessage, http.StatusServiceUnavailable)
	for _, text := range []string{"a", "b", "c"} {
		if _, err := s.ChannelMessageSend(general, text); restStatus(err) != 503 {
			t.Errorf("during the outage: got %v, want a 503 error", err)
		}
	}
	dc.ClearFaults(discordtest.RouteCreateMessage)
	if _, err := s.ChannelMessageSend(general, "d"); err != nil {
		t.Errorf("after the outage: %v", err)
	}
	dc.FailAfter(discordtest.RouteCreateMessage, 1, http.StatusInternalServerError)
	if _, err := s.ChannelMessageSend(general, "e"); restStatus(err) != 500 {
		t.Errorf("a lost answer: got %v, want a 500 error", err)
	}
	var got []string
	for _, m := range dc.Messages(general) {
		got = append(got, m.Content)
	}
	if len(got) != 2 || got[0] != "d" || got[1] != "e" {
		t.Errorf("messages %q, want [d e]: none during the outage, the lost answer's posted", got)
	}
}
