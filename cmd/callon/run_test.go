package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/store/storetest"
)

func runCmd(t *testing.T, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), args, func(k string) string { return env[k] }, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

func TestVersionAndHelp(t *testing.T) {
	t.Parallel()
	out, _, err := runCmd(t, nil, "version")
	if err != nil || !strings.HasPrefix(out, "callon ") {
		t.Errorf("callon version = %q, %v; want the version", out, err)
	}
	if _, errOut, err := runCmd(t, nil, "frobnicate"); err == nil || !strings.Contains(errOut, "Usage:") {
		t.Errorf("unknown command: err %v, stderr %q; want an error and the usage", err, errOut)
	}
}

func TestInvite(t *testing.T) {
	t.Parallel()
	if _, _, err := runCmd(t, nil, "invite"); err == nil || !strings.Contains(err.Error(), "DISCORD_APP_ID") {
		t.Errorf("invite without an app id: %v, want an error naming DISCORD_APP_ID", err)
	}
	out, _, err := runCmd(t, map[string]string{"DISCORD_APP_ID": "1234"}, "invite")
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(strings.TrimSpace(out))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	// View Channels, Send Messages, Embed Links, Read Message History,
	// Create Public Threads, Send Messages in Threads.
	const want = 1<<10 | 1<<11 | 1<<14 | 1<<16 | 1<<35 | 1<<38
	if u.Host != "discord.com" || q.Get("client_id") != "1234" || q.Get("scope") != "bot applications.commands" || q.Get("permissions") != strconv.Itoa(want) {
		t.Errorf("invite URL = %s, want client 1234, scopes bot and applications.commands, permissions %d", out, want)
	}
}

func TestConfigErrorsNameEveryVariable(t *testing.T) {
	t.Parallel()
	_, _, err := runCmd(t, map[string]string{"CALLON_MAX_ROUNDS": "lots", "DISCORD_TOKEN": ""})
	if err == nil {
		t.Fatal("run with a bad configuration returned nil")
	}
	for _, v := range []string{"CALLON_MAX_ROUNDS", "DISCORD_TOKEN", "OPENAI_API_KEY"} {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("error %q does not name %s", err, v)
		}
	}
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": storetest.EmptyURL(t)}
	out, _, err := runCmd(t, env, "migrate")
	if err != nil || !strings.Contains(out, "applied 7 migration") {
		t.Fatalf("first migrate: %q, %v", out, err)
	}
	out, _, err = runCmd(t, env, "migrate")
	if err != nil || !strings.Contains(out, "applied 0 migration") {
		t.Errorf("second migrate: %q, %v; want nothing applied", out, err)
	}
}

func TestRunStopsWhenDatabaseIsUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Every form pgx accepts, through migrate and through the bot's start
	// (which logs its configuration first).
	for _, dsn := range []string{
		"postgres://callon:hunter2@127.0.0.1:1/callon?connect_timeout=2",
		"postgres://callon@127.0.0.1:1/callon?connect_timeout=2&password=hunter2",
		"host=127.0.0.1 port=1 user=callon password=hunter2 dbname=callon connect_timeout=2",
		"host=127.0.0.1 port=1 user=callon password='hunter2' dbname=callon connect_timeout=2",
	} {
		for _, args := range [][]string{{"migrate"}, nil} {
			var stderr bytes.Buffer
			env := map[string]string{"DATABASE_URL": dsn, "DISCORD_TOKEN": "t", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
			err := run(ctx, args, func(k string) string { return env[k] }, &bytes.Buffer{}, &stderr)
			if err == nil {
				t.Fatalf("%v against a closed port returned nil", args)
			}
			if strings.Contains(err.Error()+stderr.String(), "hunter2") {
				t.Errorf("the database password leaked: %v\n%s", err, stderr.String())
			}
		}
	}
}

func TestHealthEndpoint(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	w := setup(t, nil, "CALLON_HTTP_ADDR", addr)
	var resp *http.Response
	w.dc.WaitFor(t, func() bool {
		resp, err = http.Get("http://" + addr + "/healthz")
		return err == nil
	}, "the health endpoint")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz = %d, want 200", resp.StatusCode)
	}
}

func TestCommandsRegisteredInTheDevelopmentGuild(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	w := setupWith(t, dc, nil, "DISCORD_GUILD_ID", dc.GuildID())
	if n := len(w.dc.Commands("")); n != 0 {
		t.Errorf("%d global commands registered, want none with DISCORD_GUILD_ID set", n)
	}
	for _, c := range w.dc.Commands(dc.GuildID()) {
		if c.Contexts == nil || len(*c.Contexts) != 1 || (*c.Contexts)[0] != discordgo.InteractionContextGuild {
			t.Errorf("/%s contexts = %v, want guild only", c.Name, c.Contexts)
		}
	}
}
