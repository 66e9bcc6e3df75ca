package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/callonbot/callon/llm/llmtest"
	"github.com/callonbot/callon/store/storetest"
)

// syncBuffer is a buffer safe for the chat's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// callon chat, driven through a pipe: a message answered directly, one
// delegated to a role of the roles file given on the command line, /team,
// and /dissolve, which ends it.
func TestChat(t *testing.T) {
	t.Parallel()
	ai := llmtest.New(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(
			reply("Hello from the coordinator."),
			delegate(task{Role: "poet", Instruction: "write a haiku"}),
			reply("The poet wrote: old pond, frog."))),
		llmtest.Match("You are the poet", llmtest.Seq(report("old pond, frog"))),
		llmtest.Match("You reorganize a team", llmtest.Seq(llmtest.Call("replan", map[string]any{"reason": "asked for a critic",
			"roles": []map[string]string{{"name": "poet", "description": "Writes poems"}, {"name": "critic", "description": "Judges poems"}}})))))
	roles := filepath.Join(t.TempDir(), "roles.yaml")
	if err := os.WriteFile(roles, []byte("roles:\n  - name: poet\n    description: Writes poems\n    prompt: You write short poems.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": storetest.URL(t), "OPENAI_BASE_URL": ai.URL(), "OPENAI_API_KEY": ai.APIKey(),
		"CALLON_SWEEP_INTERVAL": "1s", "LOG_LEVEL": "error"}
	var out, errOut syncBuffer
	in := strings.NewReader("hi there\nwrite me a haiku\n/replan add a critic\n/team\n/dissolve\n")
	err := run(t.Context(), []string{"chat", "--goal", "Poetry night", "--channel-roles", roles},
		func(k string) string { return env[k] }, in, &out, &errOut)
	if err != nil {
		t.Fatalf("callon chat: %v\nstderr:\n%s", err, errOut.String())
	}
	got := out.String()
	for _, want := range []string{
		"team › 🚀 **Team assembled**",
		"team › Hello from the coordinator.",
		"team › The poet wrote: old pond, frog.",
		"**poet** · `gpt-4o-mini`", // /team lists the roles file's role
		"team › 👋 **Team dissolved**",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the chat lacks %q; it printed:\n%s", want, got)
		}
	}
	if strings.Index(got, "Hello from the coordinator.") > strings.Index(got, "The poet wrote") {
		t.Errorf("answers out of order:\n%s", got)
	}
	// /replan's outcome is the team's notice, printed once.
	if n := strings.Count(got, "asked for a critic"); n != 1 {
		t.Errorf("the replan's outcome is printed %d times, want once:\n%s", n, got)
	}
	// The summary counts the tokens the team used, not those of the team
	// as it was when the chat started (0).
	if !regexp.MustCompile(`and used [1-9][0-9,]* tokens`).MatchString(got) {
		t.Errorf("the closing summary does not count the team's tokens:\n%s", got)
	}
}

// In a chat, a call that needs approval is shown with how to answer it,
// and /approve N lets the work go on.
func TestChatApproval(t *testing.T) {
	t.Parallel()
	counter := filepath.Join(t.TempDir(), "counter")
	ai := llmtest.New(t, llmtest.Switch(
		llmtest.Match(masterPrompt, masterFor(1)),
		llmtest.Match("You are the engineer", callThenReport(llmtest.Call("ops__counter", map[string]any{})))))
	roles := filepath.Join(t.TempDir(), "roles.yaml")
	yaml := "mcp_servers:\n  ops:\n    command: [" + strconv.Quote(mcpServerBin) + "]\n    env: {MCPTEST_COUNTER_FILE: " + strconv.Quote(counter) +
		"}\n    approval: required\nroles:\n  - {name: engineer, description: Runs things, prompt: You run things., tools: [ops.counter]}\n"
	if err := os.WriteFile(roles, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": storetest.URL(t), "OPENAI_BASE_URL": ai.URL(), "OPENAI_API_KEY": ai.APIKey(),
		"CALLON_SWEEP_INTERVAL": "1s", "LOG_LEVEL": "error", "PATH": os.Getenv("PATH")}
	var out, errOut syncBuffer
	in := strings.NewReader("count, please\n/approve 1\n")
	err := run(t.Context(), []string{"chat", "--goal", "Counting", "--channel-roles", roles},
		func(k string) string { return env[k] }, in, &out, &errOut)
	if err != nil {
		t.Fatalf("callon chat: %v\nstderr:\n%s", err, errOut.String())
	}
	got := out.String()
	for _, want := range []string{
		"team › 🔐 **engineer** asks to call `ops.counter`",
		"(answer /approve 1 or /deny 1)",
		"✅ Approved by you",
		"TOOL SAID: call 1 by process",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the chat lacks %q; it printed:\n%s", want, got)
		}
	}
	// The decision is printed once, when it is made: before the reply it
	// led to, not again when the request's message is settled.
	if n := strings.Count(got, "Approved by you"); n != 1 || strings.Index(got, "Approved by you") > strings.Index(got, "TOOL SAID") {
		t.Errorf("the decision is printed %d times, or after the reply:\n%s", n, got)
	}
}

// A chat whose model server cannot be reached stops at once, naming the
// URL and the variable to set, instead of retrying every message.
func TestChatUnreachableModel(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/v1"
	l.Close()
	env := map[string]string{"DATABASE_URL": storetest.URL(t), "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "k", "LOG_LEVEL": "error"}
	var out, errOut syncBuffer
	err = run(t.Context(), []string{"chat", "--goal", "Anything"}, func(k string) string { return env[k] }, strings.NewReader("hi\n"), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "cannot reach "+url+": is Ollama") || !strings.Contains(err.Error(), "set OPENAI_BASE_URL") {
		t.Fatalf("callon chat returned %v; want it to say it cannot reach %s and to name OPENAI_BASE_URL", err, url)
	}
	if out.String() != "" {
		t.Errorf("the chat printed %q before it stopped, want nothing", out.String())
	}
}

// A chat that ends leaves its team for callon chat --resume, which shows
// its last exchanges and goes on with it; a new chat meanwhile has a team
// of its own and never shows the other's.
func TestChatResume(t *testing.T) {
	t.Parallel()
	ai := llmtest.New(t, llmtest.Switch(llmtest.Match(masterPrompt, func(r llmtest.Request) llmtest.Reply {
		return reply("echo: " + r.LastUser())
	})))
	env := map[string]string{"DATABASE_URL": storetest.URL(t), "OPENAI_BASE_URL": ai.URL(), "OPENAI_API_KEY": ai.APIKey(), "LOG_LEVEL": "warn"}
	first := startChat(t, env, "--goal", "Remember me")
	first.waitFor(t, "Team assembled")
	first.say(t, "first message")
	first.waitFor(t, "echo: you: first message")
	first.in.Close()
	first.waitFor(t, "callon chat --resume reopens it (team #1)")

	other := startChat(t, env, "--goal", "Another team")
	other.waitFor(t, "New team #2")
	again := startChat(t, env, "--resume")
	again.waitFor(t, "Resumed team #1 · Remember me")
	again.waitFor(t, "you › first message\nteam › echo: you: first message")
	again.say(t, "second message")
	again.waitFor(t, "echo: you: second message")
	again.say(t, "/dissolve")
	again.waitFor(t, "Team dissolved")
	other.in.Close()
	other.waitFor(t, "reopens it (team #2)")
	if got := other.out.String(); strings.Contains(got, "first message") || strings.Contains(got, "second message") {
		t.Errorf("the other chat showed the resumed team's messages:\n%s", got)
	}
	if got := again.out.String(); strings.Contains(got, "Team assembled") {
		t.Errorf("the resumed chat showed the kickoff again:\n%s", got)
	}
}

// An interrupted chat (Ctrl-C in a script's terminal: its context ends)
// leaves its team for --resume and exits cleanly.
func TestChatInterrupted(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": storetest.URL(t), "LOG_LEVEL": "warn"}
	r, w := io.Pipe()
	defer w.Close()
	out := newWatched()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"chat", "--demo"}, func(k string) string { return env[k] }, r, out, io.Discard)
	}()
	out.waitFor(t, "Team assembled", done)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("an interrupted chat returned %v, want nil", err)
	}
	if got := out.String(); !strings.Contains(got, "callon chat --demo --resume reopens it (team #1)") {
		t.Errorf("an interrupted chat printed:\n%s\nwant how to resume its team", got)
	}
}

// A request for approval left undecided by a chat that ended is shown
// again by the chat that resumes its team, and can be decided there.
func TestChatResumeShowsWaitingRequests(t *testing.T) {
	t.Parallel()
	counter := filepath.Join(t.TempDir(), "counter")
	ai := llmtest.New(t, llmtest.Switch(
		llmtest.Match(masterPrompt, masterFor(1)),
		llmtest.Match("You are the engineer", callThenReport(llmtest.Call("ops__counter", map[string]any{})))))
	roles := filepath.Join(t.TempDir(), "roles.yaml")
	yaml := "mcp_servers:\n  ops:\n    command: [" + strconv.Quote(mcpServerBin) + "]\n    env: {MCPTEST_COUNTER_FILE: " + strconv.Quote(counter) +
		"}\n    approval: required\nroles:\n  - {name: engineer, description: Runs things, prompt: You run things., tools: [ops.counter]}\n"
	if err := os.WriteFile(roles, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": storetest.URL(t), "OPENAI_BASE_URL": ai.URL(), "OPENAI_API_KEY": ai.APIKey(),
		"CALLON_SWEEP_INTERVAL": "1s", "LOG_LEVEL": "warn", "PATH": os.Getenv("PATH"), "CALLON_ROLES_FILE": roles}
	first := startChat(t, env, "--goal", "Counting")
	first.say(t, "count, please")
	first.waitFor(t, "(answer /approve 1 or /deny 1)")
	first.in.Close()
	first.waitFor(t, "callon chat --resume reopens it")

	again := startChat(t, env, "--resume")
	again.waitFor(t, "asks to call `ops.counter`")
	again.waitFor(t, "(answer /approve 1 or /deny 1)")
	again.say(t, "/approve 1")
	again.waitFor(t, "TOOL SAID: call 1 by process")
	if n := strings.Count(again.out.String(), "asks to call"); n != 1 {
		t.Errorf("the resumed chat shows the request %d times, want once:\n%s", n, again.out.String())
	}
}
