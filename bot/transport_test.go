package bot

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
)

func TestHTTPClientRewritesDiscordRequests(t *testing.T) {
	t.Parallel()
	type seen struct {
		host, path, query, auth, body string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{r.Host, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), string(body)}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)

	client, err := NewHTTPClient(srv.URL+"/proxy/", time.Second)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	req, _ := http.NewRequest("POST", "https://discord.com/api/v9/channels/1/messages?wait=true", strings.NewReader(`{"content":"hi"}`))
	req.Header.Set("Authorization", "Bot tok")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("do: %v", err)
	}
	resp.Body.Close()

	want := seen{strings.TrimPrefix(srv.URL, "http://"), "/proxy/api/v9/channels/1/messages", "wait=true", "Bot tok", `{"content":"hi"}`}
	if s := <-got; s != want {
		t.Errorf("server saw %+v, want %+v", s, want)
	}
	if req.URL.String() != "https://discord.com/api/v9/channels/1/messages?wait=true" || req.Host != "discord.com" {
		t.Errorf("the caller's request changed to %s (host %s)", req.URL, req.Host)
	}
}

func TestHTTPClientLeavesOtherHostsAlone(t *testing.T) {
	t.Parallel()
	paths := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths <- r.URL.Path
	}))
	t.Cleanup(srv.Close)
	client, err := NewHTTPClient("http://127.0.0.1:1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(srv.URL + "/cdn/x.png")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	resp.Body.Close()
	if got := <-paths; got != "/cdn/x.png" {
		t.Errorf("got path %s, want the request unchanged", got)
	}
}

func TestHTTPClientDefaultAndInvalidURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "https://discord.com", "https://discord.com/"} {
		c, err := NewHTTPClient(u, 3*time.Second)
		if err != nil || c.Transport != nil || c.Timeout != 3*time.Second {
			t.Errorf("NewHTTPClient(%q) = %+v, %v; want a plain client", u, c, err)
		}
	}
	for _, u := range []string{"127.0.0.1:8080", "ftp://host", "http://", "http://host/api/v9", "http://host/api", "http://host?x=1", "http://a b"} {
		if _, err := NewHTTPClient(u, time.Second); err == nil {
			t.Errorf("NewHTTPClient(%q) succeeded, want an error", u)
		}
	}
}

func TestNewSessionUsesTheFakeForRESTAndGateway(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	for _, token := range []string{dc.Token(), "Bot " + dc.Token()} {
		s, err := NewSession(token, dc.URL(), discordgo.IntentsGuilds)
		if err != nil {
			t.Fatalf("new session: %v", err)
		}
		if s.Token != "Bot "+dc.Token() || s.Identify.Intents != discordgo.IntentsGuilds {
			t.Errorf("got token %q intents %d, want the bot token and GUILDS", s.Token, s.Identify.Intents)
		}
		gw, err := s.Gateway()
		if err != nil {
			t.Fatalf("gateway: %v", err)
		}
		u, err := url.Parse(gw)
		if err != nil || u.Scheme != "ws" || "http://"+u.Host != dc.URL() {
			t.Errorf("got gateway %q, want the fake's", gw)
		}
	}
	if got := dc.Calls(discordtest.RouteGetGateway); got != 2 {
		t.Errorf("the fake saw %d GET /gateway, want 2", got)
	}
	if _, err := NewSession(" ", dc.URL(), 0); err == nil {
		t.Error("empty token accepted")
	}
}
