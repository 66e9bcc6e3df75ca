package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/llm/llmtest"
	"github.com/callonbot/callon/tools/mcptest"
)

// withRolesFile writes yaml as the world's roles file.
func (w *world) withRolesFile(yaml string) {
	w.t.Helper()
	path := filepath.Join(w.t.TempDir(), "roles.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		w.t.Fatal(err)
	}
	w.env["CALLON_ROLES_FILE"] = path
}

// counterLines is how many times the mcptest counter tool ran with file.
func counterLines(t *testing.T, file string) int {
	t.Helper()
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "\n")
}

// lastToolResult is the content of the last tool message of a request.
func lastToolResult(r llmtest.Request) string {
	res := r.ToolResults()
	if len(res) == 0 {
		return ""
	}
	return res[len(res)-1].Content
}

// afterTool answers a worker's requests: the first makes call, every
// later one reports what the last tool result said.
func afterTool(call llmtest.Reply) llmtest.Script {
	var mu sync.Mutex
	first := true
	return func(r llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if first {
			first = false
			return call
		}
		return report("TOOL SAID: " + lastToolResult(r))
	}
}

// mergeResults is a master that delegates tasks, then replies with every
// result it was shown.
func mergeResults(tasks ...task) llmtest.Script {
	return llmtest.SeqFunc(
		func(llmtest.Request) llmtest.Reply { return delegate(tasks...) },
		func(r llmtest.Request) llmtest.Reply { return reply("Merged:\n" + toolResults(r)) },
	)
}

// A worker calls a real MCP server over stdio (the mcptest binary) and
// another over Streamable HTTP (with a header from the environment);
// each role is offered its own tools only, with the server's schema; the
// results reach the thread only inside the master's reply; every call is
// a TOOL signal, shown by /team.
func TestWorkersCallMCPServers(t *testing.T) {
	t.Parallel()
	remote := httptest.NewServer(mcptest.Handler(mcptest.Options{Header: "Authorization", Value: "Bearer s3cret"}))
	t.Cleanup(remote.Close)
	w := newWorld(t, discordtest.New(t), llmtest.Switch(
		llmtest.Match(masterPrompt, mergeResults(task{Role: "researcher", Instruction: "echo"}, task{Role: "analyst", Instruction: "add"})),
		llmtest.Match("You are the researcher", afterTool(llmtest.Call("local__echo", map[string]string{"text": "ECHO-42"}))),
		llmtest.Match("You are the analyst", afterTool(llmtest.Call("remote__add", map[string]float64{"a": 2, "b": 40}))),
	), "MCP_TOKEN", "s3cret")
	w.withRolesFile(fmt.Sprintf(`
mcp_servers:
  local:
    command: [%q]
    guilds: all
  remote:
    url: %q
    guilds: all
    headers: {Authorization: "Bearer ${MCP_TOKEN}"}
roles:
  - name: researcher
    description: Finds things
    prompt: You research.
    tools: [local.echo]
  - name: analyst
    description: Computes things
    prompt: You compute.
    tools: [remote.add, fetch_url]
`, mcpServerBin, remote.URL))
	w.start()
	thread := w.team("Use tools")
	msg := w.say(thread, "go")
	got := w.waitReply(thread, msg)
	mustContain(t, "reply", got, "TOOL SAID: ECHO-42", "TOOL SAID: 42")

	recs := w.ai.Requests()
	for role, want := range map[string][]string{
		"researcher": {"report", "progress", "handoff", "local__echo"},
		"analyst":    {"report", "progress", "handoff", "remote__add", "fetch_url"},
	} {
		reqs := workerRequests(recs, role)
		if len(reqs) != 2 {
			t.Fatalf("%s: %d model calls, want 2", role, len(reqs))
		}
		if names := reqs[0].Request.ToolNames(); !slices.Equal(names, want) {
			t.Errorf("%s offered %q, want %q", role, names, want)
		}
	}
	if echo, ok := workerRequests(recs, "researcher")[0].Request.Tool("local__echo"); !ok || !strings.Contains(string(echo.Parameters), `"text"`) ||
		echo.Description != "Returns its text." {
		t.Errorf("local__echo offered as %+v, want the server's description and schema", echo)
	}
	for _, m := range w.botMessages(thread) {
		if m.Reference == nil && strings.Contains(m.Content, "TOOL SAID") {
			t.Errorf("tool output reached the thread outside the reply: %q", m.Content)
		}
	}
	sigs := w.signals(thread)
	if !hasSignal(sigs, "TOOL", `"tool":"local__echo"`) || !hasSignal(sigs, "TOOL", `"tool":"remote__add"`) || !hasSignal(sigs, "TOOL", `"ok":true`) {
		t.Errorf("signals lack a TOOL per call:\n%s", strings.Join(sigs, "\n"))
	}
	out, _, err := runCmd(t, map[string]string{"DATABASE_URL": w.dbURL}, "signals", "--thread", thread)
	if err != nil || !strings.Contains(out, `"kind":"TOOL"`) || !strings.Contains(out, `local__echo`) {
		t.Errorf("callon signals = %v:\n%s\nwant the TOOL signals", err, out)
	}
	team := embedText(w.command(thread, w.dc.UserID(), 0, "team"))
	mustContain(t, "/team", team, "tools: local.echo", "tools: remote.add, fetch_url", "called `local.echo`")
}

// fetch_url fetches what CALLON_FETCH_ALLOW allows (here an httptest
// server on 127.0.0.1), and refuses another loopback address and a
// redirect to a private address: checked where it connects, so no test
// reaches the network.
func TestFetchURL(t *testing.T) {
	t.Parallel()
	page := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/away" {
			http.Redirect(rw, r, "http://10.20.30.40/inside", http.StatusFound)
			return
		}
		rw.Header().Set("Content-Type", "text/html")
		fmt.Fprint(rw, "<html><head><title>T</title></head><body><p>PAGE-TEXT here</p><script>no()</script></body></html>")
	}))
	t.Cleanup(page.Close)
	loopback := strings.Replace(page.URL, "127.0.0.1", "127.0.0.2", 1)
	fetch := func(url string) llmtest.Reply { return llmtest.Call("fetch_url", map[string]string{"url": url}) }
	w := newWorld(t, discordtest.New(t), llmtest.Switch(
		llmtest.Match(masterPrompt, mergeResults(
			task{Role: "researcher", Instruction: "allowed"},
			task{Role: "planner", Instruction: "loopback"},
			task{Role: "writer", Instruction: "redirect"})),
		llmtest.Match("You are the researcher", afterTool(fetch(page.URL+"/page"))),
		llmtest.Match("You are the planner", afterTool(fetch(loopback+"/page"))),
		llmtest.Match("You are the writer", afterTool(fetch(page.URL+"/away"))),
	), "CALLON_FETCH_ALLOW", "127.0.0.1")
	w.withRolesFile(`
roles:
  - {name: researcher, description: Reads pages, prompt: You read., tools: [fetch_url]}
  - {name: planner, description: Reads pages too, prompt: You read., tools: [fetch_url]}
  - {name: writer, description: Reads pages as well, prompt: You read., tools: [fetch_url]}
`)
	w.start()
	thread := w.team("Read the web")
	msg := w.say(thread, "go")
	got := w.waitReply(thread, msg)
	mustContain(t, "reply", got, "PAGE-TEXT here", "Status: 200", "127.0.0.2 is a loopback address: not fetched",
		"10.20.30.40 is a private address: not fetched")
	if strings.Contains(got, "no()") {
		t.Errorf("the page's script reached the model: %q", got)
	}
}

// /roles set takes a role's tools (completed from fetch_url and the
// configured servers' tools, checked against them), /roles list and
// /team show them, and the role's workers are offered exactly those.
func TestRolesSetTools(t *testing.T) {
	t.Parallel()
	w := newWorld(t, discordtest.New(t), llmtest.Switch(
		llmtest.Match(masterPrompt, mergeResults(task{Role: "scout", Instruction: "look"})),
		llmtest.Match("You are the scout", callThenReport(llmtest.Call("local__echo", map[string]string{"text": "SCOUTED"})))))
	w.withRolesFile(fmt.Sprintf("mcp_servers:\n  local:\n    command: [%q]\n    guilds: all\n", mcpServerBin))
	w.start()
	general := w.dc.ChannelID("general")

	complete := func(typed string) []string {
		t.Helper()
		ix := w.dc.Autocomplete(t, discordtest.SlashCommand{Name: "roles", ChannelID: general, Permissions: admin,
			Options: []discordtest.CommandOption{discordtest.Subcommand("set", discordtest.StringOption("name", "scout"),
				discordtest.StringOption("tools", typed).Focus())}})
		var out []string
		for _, c := range ix.WaitResponse(t).Choices {
			out = append(out, c.Name)
		}
		return out
	}
	// The first completion starts the server; its tools are listed as
	// soon as it answers (a bounded number of tries, each waiting for it).
	var got []string
	for range 5 {
		if got = complete("fetch_url, lo"); slices.Contains(got, "fetch_url, local.echo") {
			break
		}
	}
	for _, want := range []string{"fetch_url, local.*", "fetch_url, local.echo", "fetch_url, local.counter"} {
		if !slices.Contains(got, want) {
			t.Errorf("tools completion %q lacks %q", got, want)
		}
	}

	tools := func(list string) discordtest.CommandOption { return discordtest.StringOption("tools", list) }
	mustContain(t, "unknown server", w.rolesCmd(general, setRole("scout", "Scouts", "You scout.", tools("nope.echo"))),
		"❌", `no MCP server "nope"`)
	mustContain(t, "not a tool", w.rolesCmd(general, setRole("scout", "Scouts", "You scout.", tools("local"))), "❌", "<server>.<tool>")
	mustContain(t, "set", w.rolesCmd(general, setRole("scout", "Scouts", "You scout.", tools("fetch_url, local.echo"))),
		"**scout** added to", "with tools fetch_url, local.echo")
	mustContain(t, "/roles list", w.rolesCmd(general, discordtest.Subcommand("list")), "tools fetch_url, local.echo")

	_, thread := w.callon(general, "Scout around")
	mustContain(t, "/team", embedText(w.command(thread, w.dc.UserID(), 0, "team")), "**scout**", "tools: fetch_url, local.echo")
	msg := w.say(thread, "go")
	mustContain(t, "reply", w.waitReply(thread, msg), "TOOL SAID: SCOUTED")
	reqs := workerRequests(w.ai.Requests(), "scout")
	if names := reqs[0].Request.ToolNames(); !slices.Equal(names, []string{"report", "progress", "fetch_url", "local__echo"}) {
		t.Errorf("scout offered %q, want its own tools only", names)
	}
}

// TestReadmeToolsExamples keeps the roles files with MCP servers of
// docs/roles.md
// valid: parsed, and every role's tools naming a declared
// server (no server is started).
func TestReadmeToolsExamples(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../docs/roles.md")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, block := range strings.Split(string(readme), "```yaml\n")[1:] {
		example, _, _ := strings.Cut(block, "```")
		if !strings.Contains(example, "mcp_servers:") {
			continue
		}
		found++
		path := filepath.Join(t.TempDir(), "roles.yaml")
		if err := os.WriteFile(path, []byte(example), 0o600); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{"CALLON_ROLES_FILE": path, "TICKETS_TOKEN": "t"}
		cfg := config.Load(func(k string) string { return env[k] })
		if err := cfg.Validate(0); err != nil {
			t.Fatalf("docs/roles.md example %d: %v", found, err)
		}
		m, err := newTools(cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatalf("docs/roles.md example %d: %v", found, err)
		}
		t.Cleanup(func() { closeTools(m, slog.New(slog.DiscardHandler)) })
		if _, _, err := rolesConfig(cfg, m); err != nil {
			t.Fatalf("docs/roles.md example %d: %v", found, err)
		}
	}
	if found < 2 {
		t.Errorf("found %d docs/roles.md examples with mcp_servers, want the worked example and the remote one", found)
	}
}
