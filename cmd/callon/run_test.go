package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/store/storetest"
)

func runCmd(t *testing.T, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), args, func(k string) string { return env[k] }, strings.NewReader(""), &stdout, &stderr)
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
	if _, _, err := runCmd(t, nil, "invite"); err == nil || !strings.Contains(err.Error(), "DISCORD_TOKEN") || !strings.Contains(err.Error(), "DISCORD_APP_ID") {
		t.Errorf("invite with neither a token nor an app id: %v, want an error naming both", err)
	}
	out, _, err := runCmd(t, map[string]string{"DISCORD_APP_ID": "1234"}, "invite")
	if err != nil {
		t.Fatal(err)
	}
	checkInvite(t, out, "1234")
	// With the token alone, the application is looked up.
	dc := discordtest.New(t)
	out, _, err = runCmd(t, map[string]string{"DISCORD_TOKEN": dc.Token(), "DISCORD_API_URL": dc.URL()}, "invite")
	if err != nil {
		t.Fatal(err)
	}
	checkInvite(t, out, dc.AppID())
}

func checkInvite(t *testing.T, out, appID string) {
	t.Helper()
	u, err := url.Parse(strings.TrimSpace(out))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	// View Channels, Send Messages, Embed Links, Read Message History,
	// Create Public Threads, Send Messages in Threads, Add Reactions.
	const want = 1<<10 | 1<<11 | 1<<14 | 1<<16 | 1<<35 | 1<<38 | 1<<6
	if u.Host != "discord.com" || q.Get("client_id") != appID || q.Get("scope") != "bot applications.commands" || q.Get("permissions") != strconv.Itoa(want) {
		t.Errorf("invite URL = %s, want client %s, scopes bot and applications.commands, permissions %d", out, appID, want)
	}
}

// Subcommands honour --help, refuse arguments they do not take, and
// --version works.
func TestSubcommandArguments(t *testing.T) {
	t.Parallel()
	if out, _, err := runCmd(t, nil, "--version"); err != nil || !strings.HasPrefix(out, "callon ") {
		t.Errorf("callon --version = %q, %v", out, err)
	}
	for _, cmd := range []string{"version", "migrate", "worker", "invite", "signals", "run"} {
		_, errOut, err := runCmd(t, nil, cmd, "--help")
		if err != nil || !strings.Contains(errOut, "Usage: callon "+cmd) {
			t.Errorf("callon %s --help: %v, stderr %q; want its usage and no error", cmd, err, errOut)
		}
	}
	if _, _, err := runCmd(t, nil, "migrate", "now"); err == nil || !strings.Contains(err.Error(), `takes no argument "now"`) {
		t.Errorf("callon migrate now: %v, want the argument refused", err)
	}
}

// Without DATABASE_URL callon says so; naming the maintenance database
// gets a warning; a .env file in the working directory (or the one
// CALLON_ENV_FILE names) is read, the environment winning.
func TestDatabaseURLAndEnvFile(t *testing.T) {
	t.Parallel()
	if _, _, err := runCmd(t, nil, "migrate"); err == nil || !strings.Contains(err.Error(), "DATABASE_URL: is required") {
		t.Errorf("migrate without DATABASE_URL: %v, want a clear error", err)
	}
	url := storetest.EmptyURL(t)
	file := filepath.Join(t.TempDir(), "callon.env")
	if err := os.WriteFile(file, []byte("# callon\nexport DATABASE_URL=\""+url+"\"\nCALLON_MAX_ROUNDS=lots # ignored: the environment wins\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err := runCmd(t, map[string]string{"CALLON_ENV_FILE": file, "CALLON_MAX_ROUNDS": "2"}, "migrate")
	if err != nil || !strings.Contains(out, "migration") {
		t.Errorf("migrate with DATABASE_URL from the env file: %q, %v", out, err)
	}
	if _, _, err := runCmd(t, map[string]string{"CALLON_ENV_FILE": filepath.Join(t.TempDir(), "missing.env")}, "migrate"); err == nil || !strings.Contains(err.Error(), "CALLON_ENV_FILE") {
		t.Errorf("a named env file that is missing: %v, want an error naming CALLON_ENV_FILE", err)
	}
	cfg := config.Load(func(k string) string {
		return map[string]string{"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres", "CALLON_MAX_WORKERS": "4"}[k]
	})
	warnings := strings.Join(cfg.Warnings, "\n")
	if !strings.Contains(warnings, `names the database "postgres"`) || !strings.Contains(warnings, "CALLON_MAX_WORKERS is deprecated: rename it CALLON_MAX_ROLES") {
		t.Errorf("warnings = %q, want the maintenance database and the deprecated name", warnings)
	}
	if cfg.Limits.MaxWorkers != 4 {
		t.Errorf("the deprecated CALLON_MAX_WORKERS was not honoured: %d", cfg.Limits.MaxWorkers)
	}
}

// A wrong token and a Message Content intent that is off stop callon
// with an error that says what to fix.
func TestDiscordSetupErrorsSayWhatToDo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		dc   *discordtest.Server
		env  func(dc *discordtest.Server) map[string]string
		want string
	}{
		{"a wrong token", discordtest.New(t), func(dc *discordtest.Server) map[string]string {
			return map[string]string{"DISCORD_TOKEN": "not-the-token"}
		}, "DISCORD_TOKEN was rejected by Discord"},
		{"no Message Content intent", discordtest.New(t, discordtest.WithPrivilegedIntents(0)), func(dc *discordtest.Server) map[string]string {
			return map[string]string{"DISCORD_TOKEN": dc.Token()}
		}, "turn on Message Content Intent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DISCORD_API_URL": tt.dc.URL(), "DATABASE_URL": storetest.URL(t),
				"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "CALLON_CONCURRENT_TASKS": "1"}
			for k, v := range tt.env(tt.dc) {
				env[k] = v
			}
			_, _, err := runCmd(t, env)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run: %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestConfigErrorsNameEveryVariable(t *testing.T) {
	t.Parallel()
	_, _, err := runCmd(t, map[string]string{"CALLON_MAX_ROUNDS": "lots", "DISCORD_TOKEN": ""})
	if err == nil {
		t.Fatal("run with a bad configuration returned nil")
	}
	for _, v := range []string{"CALLON_MAX_ROUNDS", "DISCORD_TOKEN", "OPENAI_API_KEY", "DATABASE_URL"} {
		if !strings.Contains(err.Error(), v) {
			t.Errorf("error %q does not name %s", err, v)
		}
	}
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": storetest.EmptyURL(t)}
	files, err := filepath.Glob("../../store/migrations/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations found: %v", err)
	}
	out, _, err := runCmd(t, env, "migrate")
	if err != nil || !strings.Contains(out, fmt.Sprintf("applied %d migration", len(files))) {
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
			err := run(ctx, args, func(k string) string { return env[k] }, strings.NewReader(""), &bytes.Buffer{}, &stderr)
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

// callon signals on a session that does not exist says so and fails.
func TestSignalsOfAnUnknownSession(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": storetest.URL(t)}
	out, _, err := runCmd(t, env, "signals", "--session", "999")
	if err == nil || !strings.Contains(err.Error(), "there is no session 999") || out != "" {
		t.Errorf("signals --session 999: %q, %v; want an error and no output", out, err)
	}
}
