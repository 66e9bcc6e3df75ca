package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/llm/llmtest"
)

// admin is a member who may manage channels, so /roles is theirs.
const admin = discordgo.PermissionManageChannels | discordgo.PermissionViewChannel | discordgo.PermissionSendMessages

// member may talk but not manage channels.
const member = discordgo.PermissionViewChannel | discordgo.PermissionSendMessages

// answer runs a slash command as the default user with perms in a
// channel, and returns its final answer: the first response with text.
func (w *world) answer(channelID string, perms int64, name string, opts ...discordtest.CommandOption) discordtest.Response {
	w.t.Helper()
	ix := w.dc.SlashCommand(w.t, discordtest.SlashCommand{Name: name, ChannelID: channelID, Permissions: perms, Options: opts})
	var last discordtest.Response
	w.dc.WaitFor(w.t, func() bool {
		for _, r := range ix.Responses() {
			if r.Content != "" {
				last = r
				return true
			}
		}
		return false
	}, "an answer to /"+name)
	if !last.Ephemeral {
		w.t.Errorf("/%s answered %q publicly, want an ephemeral answer", name, last.Content)
	}
	return last
}

// rolesCmd runs /roles sub as an admin.
func (w *world) rolesCmd(channelID string, sub discordtest.CommandOption) string {
	w.t.Helper()
	return w.answer(channelID, admin, "roles", sub).Content
}

func setRole(name, description, prompt string, more ...discordtest.CommandOption) discordtest.CommandOption {
	return discordtest.Subcommand("set", append([]discordtest.CommandOption{
		discordtest.StringOption("name", name),
		discordtest.StringOption("description", description),
		discordtest.StringOption("prompt", prompt),
	}, more...)...)
}

var threadMention = regexp.MustCompile(`ready in <#(\d+)>`)

// callon runs /callon in a channel and returns the answer and the team's
// thread ("" when no team started).
func (w *world) callon(channelID, goal string, opts ...discordtest.CommandOption) (string, string) {
	w.t.Helper()
	r := w.answer(channelID, 0, "callon", append([]discordtest.CommandOption{discordtest.StringOption("goal", goal)}, opts...)...)
	m := threadMention.FindStringSubmatch(r.Content)
	if m == nil {
		return r.Content, ""
	}
	w.dc.WaitFor(w.t, func() bool { return len(w.botMessages(m[1])) >= 1 }, "the kickoff message")
	return r.Content, m[1]
}

func mustContain(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, s := range want {
		if !strings.Contains(got, s) {
			t.Errorf("%s: got\n%s\nwant it to contain %q", what, got, s)
		}
	}
}

func TestRolesSetThenCallonRunsTheAdminsPromptAndModel(t *testing.T) {
	t.Parallel()
	const prompt = "You write punchy copy in the voice of ACME Rockets."
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(
			delegate(task{Role: "copywriter", Instruction: "three taglines"}),
			reply("Here are your taglines."))),
		llmtest.Match("You are the copywriter", llmtest.Seq(report("Go further. Go ACME. Go now.")))),
		"CALLON_MODELS", "gpt-4.1")
	general := w.dc.ChannelID("general")

	got := w.rolesCmd(general, setRole("copywriter", "Writes punchy launch copy", prompt,
		discordtest.StringOption("model", "gpt-4.1"), discordtest.NumberOption("temperature", 0.4), discordtest.IntegerOption("max_tokens", 700)))
	mustContain(t, "/roles set", got, "✅", "**copywriter** added to", "`gpt-4.1`", "now get `copywriter` (from this channel)", "Before, they got `researcher`")

	_, thread := w.callon(general, "Launch week")
	if thread == "" {
		t.Fatal("no team started")
	}
	kickoff := w.botMessages(thread)[0].Content
	if !strings.Contains(kickoff, "copywriter") || strings.Contains(kickoff, "researcher") {
		t.Errorf("kickoff:\n%s\nwant the channel's roster only (copywriter)", kickoff)
	}
	msg := w.say(thread, "write taglines")
	if got := w.waitReply(thread, msg); got != "Here are your taglines." {
		t.Errorf("reply = %q", got)
	}
	recs := workerRequests(w.ai.Requests(), "copywriter")
	if len(recs) != 1 {
		t.Fatalf("got %d copywriter requests, want 1", len(recs))
	}
	req := recs[0].Request
	if req.Model != "gpt-4.1" {
		t.Errorf("worker model = %q, want gpt-4.1 (the admin's)", req.Model)
	}
	if !strings.Contains(req.System(), prompt) {
		t.Errorf("worker system prompt:\n%s\nwant it to carry the admin's prompt", req.System())
	}
	if req.Temperature == nil || *req.Temperature < 0.39 || *req.Temperature > 0.41 || req.MaxTokens != 700 {
		t.Errorf("worker temperature %v, max tokens %d; want 0.4 and 700", req.Temperature, req.MaxTokens)
	}
	if enum := w.ai.Requests()[0].Request.ToolEnum("delegate", "tasks", "role"); !slices.Equal(enum, []string{"copywriter"}) {
		t.Errorf("delegate's roles = %v, want [copywriter]", enum)
	}

	list := w.rolesCmd(thread, discordtest.Subcommand("list"))
	mustContain(t, "/roles list", list, "<#"+general+">", "this channel (1)", "**copywriter** — Writes punchy launch copy",
		"model `gpt-4.1`", "temperature 0.4", "max 700 tokens", "source: channel", "set by <@"+w.dc.UserID()+"> <t:",
		"built-in roles (5)", "Recent changes", "set `copywriter` in this channel")
}

func TestRolesRefusedToMembersWhoCannotManageChannels(t *testing.T) {
	t.Parallel()
	w := setup(t, nil)
	general := w.dc.ChannelID("general")
	var def *discordgo.ApplicationCommand
	for _, c := range w.dc.Commands("") {
		if c.Name == "roles" {
			def = c
		}
	}
	if def == nil || def.DefaultMemberPermissions == nil || *def.DefaultMemberPermissions != discordgo.PermissionManageChannels ||
		def.Contexts == nil || !slices.Equal(*def.Contexts, []discordgo.InteractionContextType{discordgo.InteractionContextGuild}) {
		t.Fatalf("/roles registered as %+v, want default_member_permissions %d and guild only", def, discordgo.PermissionManageChannels)
	}
	// A server's Integrations settings can show /roles to anyone: the bot
	// checks the member's permissions itself.
	for _, sub := range []discordtest.CommandOption{
		setRole("chef", "Cooks", "You cook."),
		discordtest.Subcommand("reset"),
		discordtest.Subcommand("list"),
	} {
		r := w.answer(general, member, "roles", sub)
		mustContain(t, "/roles "+sub.Name+" by a member", r.Content, "Only members who can manage channels")
	}
	got := w.answer(general, discordgo.PermissionAdministrator, "roles", discordtest.Subcommand("list")).Content
	mustContain(t, "/roles list by an administrator", got, "built-in roles (5)", "**researcher**")
	if strings.Contains(got, "chef") {
		t.Errorf("a member's /roles set was stored:\n%s", got)
	}
}

func TestRolesThreadUsesItsParentsRoster(t *testing.T) {
	t.Parallel()
	w := setup(t, nil)
	general := w.dc.ChannelID("general")
	w.rolesCmd(general, setRole("sre", "Keeps production up", "You run production."))
	w.rolesCmd(general, setRole("go-reviewer", "Reviews Go code", "You review Go."))
	thread := w.dc.AddThread(general, "incident 42", discordgo.ChannelTypeGuildPublicThread).ID

	list := w.rolesCmd(thread, discordtest.Subcommand("list"))
	mustContain(t, "/roles list in a thread", list, "<#"+general+">", "this channel (2)", "**sre**", "**go-reviewer**")

	// Changes made from a thread apply to its parent channel.
	w.rolesCmd(thread, discordtest.Subcommand("remove", discordtest.StringOption("name", "go-reviewer")))
	got, team := w.callon(thread, "Fix the outage")
	if team != thread || !strings.Contains(got, "Your team (sre)") {
		t.Errorf("/callon in the thread: %q, want the parent's roster (sre) in this thread", got)
	}
	list = w.rolesCmd(general, discordtest.Subcommand("list", discordtest.ChannelOption("channel", thread)))
	mustContain(t, "/roles list channel:<thread>", list, "<#"+general+">", "this channel (1)", "removed `go-reviewer` from this channel")
}

func TestRolesGuildScopeChannelScopeAndReset(t *testing.T) {
	t.Parallel()
	w := setup(t, nil)
	general, random := w.dc.ChannelID("general"), w.dc.ChannelID("random")
	guild := discordtest.StringOption("scope", "guild")

	got := w.rolesCmd(random, setRole("analyst", "Reads the market", "You analyse markets.", guild))
	mustContain(t, "/roles set scope:guild", got, "this server's roster", "now get `analyst` (from this server)")
	got = w.rolesCmd(general, setRole("copywriter", "Writes copy", "You write copy."))
	mustContain(t, "/roles set in #general", got, "now get `copywriter` (from this channel)", "Before, they got `analyst` (from this server)")

	if got, _ := w.callon(random, "Size the market"); !strings.Contains(got, "Your team (analyst)") {
		t.Errorf("/callon in #random: %q, want the server's roster", got)
	}
	if got, _ := w.callon(general, "Write the launch post"); !strings.Contains(got, "Your team (copywriter)") {
		t.Errorf("/callon in #general: %q, want the channel's own roster, not merged with the server's", got)
	}

	got = w.rolesCmd(general, discordtest.Subcommand("reset"))
	mustContain(t, "/roles reset", got, "Removed the roles of <#"+general+">'s roster: `copywriter`", "now get `analyst` (from this server)")
	got = w.rolesCmd(general, discordtest.Subcommand("reset"))
	mustContain(t, "second /roles reset", got, "has no roles of its own: nothing to reset")
	got = w.rolesCmd(general, discordtest.Subcommand("remove", discordtest.StringOption("name", "analyst"), guild))
	mustContain(t, "/roles remove scope:guild", got, "**analyst** removed from this server's roster", "now get `researcher`", "(from built-in roles)")
	list := w.rolesCmd(general, discordtest.Subcommand("list"))
	mustContain(t, "/roles list", list, "built-in roles (5)", "reset this channel (removed `copywriter`)", "removed `analyst` from this server")
}

func TestRolesValidationErrors(t *testing.T) {
	t.Parallel()
	w := setup(t, nil, "CALLON_MAX_PROMPT", "100", "CALLON_MAX_ROLES", "2")
	general := w.dc.ChannelID("general")
	tests := []struct {
		name string
		sub  discordtest.CommandOption
		want []string
	}{
		{"bad name", setRole("Copy Writer", "Writes", "You write."), []string{"❌", "lowercase slug"}},
		{"disallowed model", setRole("writer", "Writes", "You write.", discordtest.StringOption("model", "o1-pro")),
			[]string{`model "o1-pro" is not allowed`, "gpt-4o-mini, gpt-4o"}},
		{"long prompt", setRole("writer", "Writes", strings.Repeat("p", 101)), []string{"prompt is 101 characters long; the limit is 100"}},
		{"empty description", setRole("writer", "  ", "You write."), []string{"description is empty"}},
		{"long description", setRole("writer", strings.Repeat("d", 201), "You write."), []string{"description is 201 characters"}},
		{"first", setRole("writer", "Writes", "You write."), []string{"✅"}},
		{"second", setRole("editor", "Edits", "You edit."), []string{"✅"}},
		{"same name again replaces", setRole("writer", "Writes better", "You write well."), []string{"✅", "updated in"}},
		{"over the cap", setRole("seo", "Optimises", "You do SEO."), []string{"already has 2 roles"}},
		{"remove unknown", discordtest.Subcommand("remove", discordtest.StringOption("name", "ghost")), []string{`has no role "ghost" of its own`}},
	}
	for _, tc := range tests {
		mustContain(t, tc.name, w.rolesCmd(general, tc.sub), tc.want...)
	}
	list := w.rolesCmd(general, discordtest.Subcommand("list"))
	mustContain(t, "/roles list", list, "this channel (2)", "**writer** — Writes better", "**editor**")

	before := len(w.dc.Threads(general))
	got, thread := w.callon(general, "Draft", discordtest.StringOption("roles", "writer, chef"))
	if thread != "" || !strings.Contains(got, "no role `chef`") || !strings.Contains(got, "available: `writer`, `editor`") {
		t.Errorf("/callon roles:writer,chef: %q, want an error naming chef and listing the roles", got)
	}
	if n := len(w.dc.Threads(general)); n != before {
		t.Errorf("got %d threads, want %d: no thread for a refused team", n, before)
	}
	got, thread = w.callon(general, "Draft", discordtest.StringOption("roles", "Editor"))
	if thread == "" || !strings.Contains(got, "Your team (editor)") {
		t.Errorf("/callon roles:Editor: %q, want a team of the editor only", got)
	}
}

func TestRolesAutocomplete(t *testing.T) {
	t.Parallel()
	w := setup(t, nil, "CALLON_MODELS", "gpt-4.1,claude-sonnet")
	general, random := w.dc.ChannelID("general"), w.dc.ChannelID("random")
	thread := w.dc.AddThread(general, "t", discordgo.ChannelTypeGuildPublicThread).ID
	w.rolesCmd(random, setRole("copywriter", "Writes copy", "You write."))
	w.rolesCmd(random, setRole("cfo", "Counts money", "You count."))

	complete := func(channelID string, perms int64, name string, opts ...discordtest.CommandOption) []string {
		t.Helper()
		ix := w.dc.Autocomplete(t, discordtest.SlashCommand{Name: name, ChannelID: channelID, Permissions: perms, Options: opts})
		r := ix.WaitResponse(t)
		if r.Type != discordgo.InteractionApplicationCommandAutocompleteResult || r.After > 3*time.Second {
			t.Errorf("autocomplete answered with type %d after %s, want type 8 within 3 s", r.Type, r.After)
		}
		var out []string
		for _, c := range r.Choices {
			if c.Name != fmt.Sprint(c.Value) {
				t.Errorf("choice %q has value %v, want the same", c.Name, c.Value)
			}
			out = append(out, c.Name)
		}
		return out
	}
	check := func(name string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s: got choices %q, want %q", name, got, want)
		}
	}
	roles := func(typed string) discordtest.CommandOption { return discordtest.StringOption("roles", typed).Focus() }
	goal := discordtest.StringOption("goal", "x")

	check("/callon roles in #general", complete(general, 0, "callon", goal, roles("")), "researcher", "planner", "engineer", "writer", "reviewer")
	check("/callon roles in a thread, second name", complete(thread, 0, "callon", roles("researcher,WR")), "researcher, writer")
	check("/callon roles in #random", complete(random, 0, "callon", roles("c")), "copywriter", "cfo")
	check("/callon roles, last name left", complete(random, 0, "callon", roles("cfo, ")), "cfo, copywriter")
	check("/callon roles, no match", complete(random, 0, "callon", roles("zzz")))

	remove := func(typed string, more ...discordtest.CommandOption) discordtest.CommandOption {
		return discordtest.Subcommand("remove", append([]discordtest.CommandOption{discordtest.StringOption("name", typed).Focus()}, more...)...)
	}
	check("/roles remove in #random", complete(random, admin, "roles", remove("co")), "copywriter")
	check("/roles remove in #general (nothing of its own)", complete(general, admin, "roles", remove("")))
	check("/roles remove by a member", complete(random, member, "roles", remove("")))
	check("/roles set model", complete(random, admin, "roles", discordtest.Subcommand("set",
		discordtest.StringOption("name", "x"), discordtest.StringOption("model", "").Focus())), "gpt-4o-mini", "gpt-4.1", "claude-sonnet")
	check("/roles set model by prefix", complete(random, admin, "roles", discordtest.Subcommand("set",
		discordtest.StringOption("model", "CLA").Focus())), "claude-sonnet")
	check("/roles set name offers the roster in use", complete(general, admin, "roles", discordtest.Subcommand("set",
		discordtest.StringOption("name", "re").Focus())), "researcher", "reviewer")

	w.rolesCmd(random, setRole("analyst", "Analyses", "You analyse.", discordtest.StringOption("scope", "guild")))
	check("/roles remove scope:guild", complete(general, admin, "roles", remove("", discordtest.StringOption("scope", "guild"))), "analyst")
	check("/callon roles in #general after a server role", complete(general, 0, "callon", roles("")), "analyst")
}

func TestRolesFile(t *testing.T) {
	t.Parallel()
	w := setup(t, nil)
	general, random := w.dc.ChannelID("general"), w.dc.ChannelID("random")
	path := filepath.Join(t.TempDir(), "roles.yaml")
	yaml := fmt.Sprintf(`
guilds:
  "%s":
    roles:
      - name: analyst
        description: Reads the market
        prompt: You analyse markets.
    channels:
      "%s":
        roles:
          - name: go-reviewer
            description: Reviews Go code
            prompt: You review Go code.
            model: gpt-4o
          - name: sre
            description: Keeps production up
            prompt: You run production.
            timeout: 2m
`, w.dc.GuildID(), general)
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	w.env["CALLON_ROLES_FILE"] = path
	w.restart()

	if got, _ := w.callon(general, "Review the PR"); !strings.Contains(got, "Your team (go-reviewer, sre)") {
		t.Errorf("/callon in #general: %q, want the file's channel roster", got)
	}
	if got, _ := w.callon(random, "Size the market"); !strings.Contains(got, "Your team (analyst)") {
		t.Errorf("/callon in #random: %q, want the file's guild roster", got)
	}
	list := w.rolesCmd(general, discordtest.Subcommand("list"))
	mustContain(t, "/roles list", list, "roles file (this channel) (2)", "source: file", "model `gpt-4o`", "timeout 2m0s",
		"roles file (this server) (1)", "built-in roles (5)")
	// A command beats the file.
	w.rolesCmd(general, setRole("writer", "Writes", "You write."))
	if got, _ := w.callon(general, "Write it"); !strings.Contains(got, "Your team (writer)") {
		t.Errorf("/callon after /roles set: %q, want the channel's roles set by command", got)
	}
}

func TestRolesFileCheckedAtStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, yaml string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := func(file string) map[string]string {
		// Nothing listens on port 1: the file is checked before Postgres.
		return map[string]string{"DISCORD_TOKEN": "t", "OPENAI_API_KEY": "k", "DATABASE_URL": "postgres://postgres@127.0.0.1:1/x", "CALLON_ROLES_FILE": file}
	}
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"model", "guilds:\n  \"1\":\n    channels:\n      \"2\":\n        roles:\n          - {name: copywriter, description: d, prompt: p, model: o1-pro}\n",
			[]string{"CALLON_ROLES_FILE", "model.yaml", "guild 1, channel 2", `role "copywriter"`, `model "o1-pro" is not allowed`}},
		{"cap", "guilds:\n  \"1\":\n    roles: [{name: a, description: d, prompt: p}, {name: b, description: d, prompt: p}, {name: c, description: d, prompt: p}]\n",
			[]string{"CALLON_ROLES_FILE", "cap.yaml", "guild 1:", "3 roles; a team may have at most 2"}},
		{"shape", "roles:\n  - name: a\n    promt: p\n",
			[]string{"CALLON_ROLES_FILE", "shape.yaml", "line 3", "promt"}},
	}
	for _, tc := range tests {
		e := env(write(tc.name+".yaml", tc.yaml))
		e["CALLON_MAX_ROLES"] = "2"
		_, _, err := runCmd(t, e)
		if err == nil {
			t.Errorf("%s: run returned nil, want an error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: got %q, want it to contain %q", tc.name, err, w)
			}
		}
	}
}

// TestReadmeRolesExample keeps the roles file of docs/roles.md valid.
func TestReadmeRolesExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/roles.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```yaml\n")
	example, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/roles.md has no yaml example")
	}
	path := filepath.Join(t.TempDir(), "roles.yaml")
	if err := os.WriteFile(path, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := config.Load(func(k string) string { return map[string]string{"CALLON_ROLES_FILE": path}[k] })
	if err := cfg.Validate(0); err != nil {
		t.Fatalf("docs/roles.md example: %v", err)
	}
	if _, _, err := rolesConfig(cfg, nil); err != nil {
		t.Fatalf("docs/roles.md example: %v", err)
	}
	if len(cfg.Roles) != 3 {
		t.Errorf("docs/roles.md example: got %d rosters, want 3 (default, server, channel)", len(cfg.Roles))
	}
}

// /roles list of another channel shows its roles (and their prompts)
// only to a member who can see that channel. (It showed any channel's.)
func TestRolesListOfAChannelOneCannotSee(t *testing.T) {
	t.Parallel()
	w := setup(t, nil)
	general, secret := w.dc.ChannelID("general"), w.dc.ChannelID("random")
	mustContain(t, "set", w.rolesCmd(secret, setRole("spy", "Secret work", "THE SECRET PROMPT")), "**spy** added to")
	mod := w.dc.AddUser("mod")
	w.dc.SetMemberRoles(w.dc.GuildID(), mod, w.dc.AddRole(w.dc.GuildID(), "mods", discordgo.PermissionManageChannels))
	w.dc.SetOverwrite(secret, discordtest.Overwrite{ID: mod, Member: true, Deny: discordgo.PermissionViewChannel})
	list := func(user string) string {
		return w.command(general, user, admin, "roles", discordtest.Subcommand("list", discordtest.ChannelOption("channel", secret))).Content
	}
	got := list(mod)
	mustContain(t, "a channel the member cannot see", got, "only list the roles of channels of this server that you can see")
	if strings.Contains(got, "spy") {
		t.Errorf("the hidden channel's roles show: %q", got)
	}
	mustContain(t, "a channel the member sees", list(w.dc.UserID()), "**spy**")
}
