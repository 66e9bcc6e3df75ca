package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
	"github.com/callonbot/callon/store/storetest"
)

// doctorWorld is what callon doctor checks: a fake Discord, a fake model
// server, a fresh database and a roles file giving a channel of the fake
// Discord a role that uses the test MCP server's echo tool.
type doctorWorld struct {
	t   *testing.T
	dc  *discordtest.Server
	ai  *llmtest.Server
	env map[string]string
}

func newDoctorWorld(t *testing.T, dcOpts []discordtest.Option, script llmtest.Script, aiOpts ...llmtest.Option) *doctorWorld {
	t.Helper()
	w := &doctorWorld{t: t, dc: discordtest.New(t, dcOpts...), ai: llmtest.New(t, script, aiOpts...)}
	w.env = map[string]string{
		"CALLON_ENV_FILE": "-",
		"DISCORD_TOKEN":   w.dc.Token(),
		"DISCORD_API_URL": w.dc.URL(),
		"DATABASE_URL":    storetest.URL(t),
		"OPENAI_BASE_URL": w.ai.URL(),
		"OPENAI_API_KEY":  w.ai.APIKey(),
	}
	w.roles("local.echo")
	return w
}

// roles writes the roles file: the MCP test server as "local", and a
// role of #general using tools.
func (w *doctorWorld) roles(tools string) {
	w.t.Helper()
	yaml := fmt.Sprintf(`mcp_servers:
  local:
    command: [%q]
    guilds: all
guilds:
  %q:
    channels:
      %q:
        roles:
          - name: scout
            description: Looks things up
            prompt: You look things up.
            tools: [%s]
`, mcpServerBin, w.dc.GuildID(), w.dc.ChannelID("general"), tools)
	path := filepath.Join(w.t.TempDir(), "roles.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		w.t.Fatal(err)
	}
	w.env["CALLON_ROLES_FILE"] = path
}

// doctor runs callon doctor and returns its output and error.
func (w *doctorWorld) doctor(args ...string) (string, error) {
	w.t.Helper()
	out, errOut, err := runCmd(w.t, w.env, append([]string{"doctor"}, args...)...)
	if err != nil && !strings.Contains(errOut, err.Error()) {
		w.t.Errorf("stderr %q does not say %q", errOut, err)
	}
	return out, err
}

// line is the output's line about subject (its first), with the fix
// that follows it.
func line(out, mark, subject string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, mark+" "+subject) {
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], "  → ") {
				return l + "\n" + lines[i+1]
			}
			return l
		}
	}
	return ""
}

// mustLine fails the test unless out has a line marked mark about
// subject containing each of wants; it returns that line.
func mustLine(t *testing.T, out, mark, subject string, wants ...string) string {
	t.Helper()
	l := line(out, mark, subject)
	if l == "" {
		t.Fatalf("no %s line about %q in:\n%s", mark, subject, out)
	}
	for _, want := range wants {
		if !strings.Contains(l, want) {
			t.Errorf("line %q lacks %q", l, want)
		}
	}
	return l
}

func TestDoctorAllGood(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, nil, llmtest.Always(llmtest.Call("record_word", map[string]any{"word": "callon"})))
	out, err := w.doctor("--probe-models")
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	if strings.Contains(out, "✗") {
		t.Errorf("a problem in a good setup:\n%s", out)
	}
	mustLine(t, out, "✓", "configuration")
	mustLine(t, out, "✓", "database", "up to date")
	mustLine(t, out, "✓", "Discord token", w.dc.AppID())
	mustLine(t, out, "✓", "Message Content intent")
	mustLine(t, out, "✓", "Public Bot", "off")
	mustLine(t, out, "✓", "server G", "the bot has the permissions")
	mustLine(t, out, "✓", "#general (G)", "the bot has the permissions")
	mustLine(t, out, "✓", "model server "+w.ai.URL(), "answers")
	mustLine(t, out, "✓", "model gpt-4o (CALLON_MASTER_MODEL", "listed")
	mustLine(t, out, "✓", "model gpt-4o-mini (CALLON_WORKER_MODEL", "listed")
	mustLine(t, out, "✓", "tool calls of gpt-4o", "called a test tool (native)")
	mustLine(t, out, "✓", "MCP server local", "started", "tools")
	if !strings.HasSuffix(out, "Everything callon needs is in place.\n") && !strings.Contains(out, "No problem") {
		t.Errorf("no conclusion at the end:\n%s", out)
	}
	// The probe asked for the tool, as the master's calls do.
	reqs := w.ai.Requests()
	if len(reqs) != 2 || !reqs[0].Request.HasTool("record_word") || reqs[0].Request.ToolChoice != "required" {
		t.Errorf("probe requests = %+v; want one per model, offering a tool with tool_choice required", reqs)
	}
}

// Without --probe-models no model is asked anything: a probe spends
// tokens.
func TestDoctorDoesNotProbeUnasked(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, nil, nil)
	out, err := w.doctor()
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	mustLine(t, out, "–", "tool calls", "--probe-models")
	if n := len(w.ai.Requests()); n != 0 {
		t.Errorf("%d chat requests without --probe-models, want none", n)
	}
}

func TestDoctorBadToken(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, nil, nil)
	w.env["DISCORD_TOKEN"] = "not-the-token"
	out, err := w.doctor()
	if err == nil {
		t.Fatalf("doctor with a bad token succeeded:\n%s", out)
	}
	mustLine(t, out, "✗", "Discord token", "rejected", "reset it", "DISCORD_TOKEN")
}

func TestDoctorMissingIntent(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, []discordtest.Option{discordtest.WithoutPrivilegedIntents()}, nil)
	out, err := w.doctor()
	if err == nil {
		t.Fatalf("doctor without the intent succeeded:\n%s", out)
	}
	mustLine(t, out, "✗", "Message Content intent", "not enabled", "Privileged Gateway Intents")
}

// A public bot works: it is a warning, not a problem.
func TestDoctorPublicBot(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, []discordtest.Option{discordtest.WithPublicBot()}, nil)
	out, err := w.doctor()
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	mustLine(t, out, "!", "Public Bot", "on", "turn off Public Bot")
}

func TestDoctorMissingPermission(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, nil, nil)
	// #general, which the roles file gives a roster, denies @everyone
	// (the bot included) sending messages and creating threads.
	w.dc.SetOverwrite(w.dc.ChannelID("general"), discordtest.Overwrite{ID: w.dc.GuildID(),
		Deny: discordgo.PermissionSendMessages | discordgo.PermissionCreatePublicThreads})
	out, err := w.doctor()
	if err == nil {
		t.Fatalf("doctor with a missing permission succeeded:\n%s", out)
	}
	mustLine(t, out, "✗", "#general (G)", "lacks Send Messages, Create Public Threads", "Edit Channel → Permissions")
	mustLine(t, out, "✓", "server G") // the server as a whole is fine
}

// A bot in no server, or not in DISCORD_GUILD_ID, is told how to invite
// it.
func TestDoctorBotNotInGuild(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, nil, nil)
	w.env["DISCORD_GUILD_ID"] = "42"
	out, err := w.doctor()
	if err == nil {
		t.Fatalf("doctor with the bot outside DISCORD_GUILD_ID succeeded:\n%s", out)
	}
	mustLine(t, out, "✗", "server 42", "not in it", "oauth2/authorize?client_id="+w.dc.AppID())
}

func TestDoctorUnreachableModel(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, nil, nil)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/v1"
	l.Close() // nothing listens there now
	w.env["OPENAI_BASE_URL"] = closed
	out, err := w.doctor("--probe-models")
	if err == nil {
		t.Fatalf("doctor with an unreachable model server succeeded:\n%s", out)
	}
	mustLine(t, out, "✗", "model server "+closed, "cannot reach", "OPENAI_BASE_URL")
	mustLine(t, out, "–", "model gpt-4o (", "its server does not answer")
}

func TestDoctorMissingModel(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, nil, nil, llmtest.WithModels("gpt-4o", "llama3.1"))
	out, err := w.doctor()
	if err == nil {
		t.Fatalf("doctor with a missing model succeeded:\n%s", out)
	}
	mustLine(t, out, "✗", "model gpt-4o-mini (CALLON_WORKER_MODEL)", `does not list "gpt-4o-mini"`, "set CALLON_WORKER_MODEL", "gpt-4o, llama3.1")
	mustLine(t, out, "✓", "model gpt-4o (CALLON_MASTER_MODEL")
}

// A model that answers in text when it must call a tool fails the probe.
func TestDoctorModelWithoutToolCalls(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, nil, llmtest.Always(llmtest.Text("pong")))
	out, err := w.doctor("--probe-models")
	if err == nil {
		t.Fatalf("doctor with a model that calls no tool succeeded:\n%s", out)
	}
	mustLine(t, out, "✗", "tool calls of gpt-4o", "answered in text instead of calling the tool", "docs/models.md")
}

func TestDoctorUnknownTool(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, nil, nil)
	w.roles("local.echo, local.read_file_typo")
	out, err := w.doctor()
	if err == nil {
		t.Fatalf("doctor with an unknown tool succeeded:\n%s", out)
	}
	mustLine(t, out, "✗", "roles file", `role "scout"`, `"local.read_file_typo"`, `lists no tool "read_file_typo"`, "echo")
}

// A server that cannot be started is a problem for doctor (and only a
// warning when the bot starts).
func TestDoctorServerThatCannotStart(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, nil, nil)
	w.env["CALLON_ROLES_FILE"] = writeFile(t, "roles.yaml", "mcp_servers:\n  broken:\n    command: [\"/nonexistent/mcp-server\"]\n    guilds: all\n")
	out, err := w.doctor()
	if err == nil {
		t.Fatalf("doctor with a server that cannot start succeeded:\n%s", out)
	}
	mustLine(t, out, "✗", "MCP server broken", "cannot be started", "mcp_servers")
}

func TestDoctorDatabase(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, nil, nil)
	w.env["DATABASE_URL"] = strings.Replace(w.env["DATABASE_URL"], "/callon_", "/callon_missing_", 1)
	out, err := w.doctor()
	if err == nil {
		t.Fatalf("doctor with a missing database succeeded:\n%s", out)
	}
	mustLine(t, out, "✗", "database", "does not exist", "createdb callon_missing_")

	// Once migrated, the database is fine.
	w.env["DATABASE_URL"] = storetest.URL(t)
	if _, _, err := runCmd(t, w.env, "migrate"); err != nil {
		t.Fatal(err)
	}
	out, err = w.doctor()
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	mustLine(t, out, "✓", "database", "up to date")
}

// Without DISCORD_TOKEN, as for callon chat, Discord is not checked and
// not a problem; an invalid variable is.
func TestDoctorConfiguration(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, nil, nil)
	delete(w.env, "DISCORD_TOKEN")
	w.env["CALLON_MAX_ROUNDS"] = "lots"
	out, err := w.doctor()
	if err == nil {
		t.Fatalf("doctor with an invalid variable succeeded:\n%s", out)
	}
	mustLine(t, out, "✗", "configuration", "CALLON_MAX_ROUNDS", `"lots"`)
	mustLine(t, out, "–", "Discord", "DISCORD_TOKEN is not set")
}

// writeFile writes content to a file of the test's own and returns its
// path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The bot refuses to start when a role names a tool its server does not
// list, saying where in the file.
func TestStartRefusesUnknownTool(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, nil, nil)
	w.roles("local.echo, local.read_file_typo")
	_, errOut, err := runCmd(t, w.env)
	if err == nil {
		t.Fatal("callon started with a role naming a tool its server does not list")
	}
	for _, want := range []string{"CALLON_ROLES_FILE", `role "scout"`, `"local.read_file_typo"`, `lists no tool "read_file_typo"`, "echo"} {
		if !strings.Contains(err.Error(), want) || !strings.Contains(errOut, want) {
			t.Errorf("error %q (stderr %q) lacks %q", err, errOut, want)
		}
	}
}

// A server that cannot be started at start is a warning: callon runs,
// and the start-up checks' summary says so.
func TestStartWarnsOfServerThatCannotStart(t *testing.T) {
	t.Parallel()
	w := newWorld(t, discordtest.New(t), nil)
	w.withRolesFile(`mcp_servers:
  broken:
    command: ["/nonexistent/mcp-server"]
    guilds: all
roles:
  - name: scout
    description: Looks things up
    prompt: You look things up.
    tools: [broken.search]
`)
	w.start()
	w.dc.WaitFor(t, func() bool {
		return w.logged("WARN", "cannot be started", `check="MCP server broken"`) &&
			w.logged("start-up checks done", "warnings=1", "problems=0")
	}, "a warning about the server, and the summary")
}

// Where teams have worker personas, doctor says whether the bot may
// manage the channel's webhooks: without it, members' parts are posted in
// callon's own voice (a warning: teams still work).
func TestDoctorPersonasNeedManageWebhooks(t *testing.T) {
	t.Parallel()
	w := newDoctorWorld(t, nil, nil)
	yaml := fmt.Sprintf(`mcp_servers:
  local:
    command: [%q]
    guilds: all
guilds:
  %q:
    channels:
      %q:
        personas: on
        roles:
          - name: scout
            description: Looks things up
            prompt: You look things up.
`, mcpServerBin, w.dc.GuildID(), w.dc.ChannelID("general"))
	if err := os.WriteFile(w.env["CALLON_ROLES_FILE"], []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := w.doctor()
	if err != nil {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	mustLine(t, out, "✓", "#general (G), personas", "may manage the channel's webhooks")

	w.dc.DenyWebhooks(w.dc.ChannelID("general"))
	out, err = w.doctor()
	if err != nil {
		t.Fatalf("a missing Manage Webhooks is a warning, not a problem: %v\n%s", err, out)
	}
	mustLine(t, out, "!", "#general (G), personas", "lacks Manage Webhooks", "Edit Channel → Permissions")
	mustLine(t, out, "✓", "#general (G)", "the bot has the permissions teams need")
}
