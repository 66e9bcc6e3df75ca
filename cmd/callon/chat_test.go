package main

import (
	"bytes"
	"os"
	"path/filepath"
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
		llmtest.Match("You are the poet", llmtest.Seq(report("old pond, frog")))))
	roles := filepath.Join(t.TempDir(), "roles.yaml")
	if err := os.WriteFile(roles, []byte("roles:\n  - name: poet\n    description: Writes poems\n    prompt: You write short poems.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": storetest.URL(t), "OPENAI_BASE_URL": ai.URL(), "OPENAI_API_KEY": ai.APIKey(),
		"CALLON_SWEEP_INTERVAL": "1s", "LOG_LEVEL": "error"}
	var out, errOut syncBuffer
	in := strings.NewReader("hi there\nwrite me a haiku\n/team\n/dissolve\n")
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
		"✅ Approved by <@you>",
		"TOOL SAID: call 1 by process",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the chat lacks %q; it printed:\n%s", want, got)
		}
	}
}
