package main

import (
	"os"
	"strings"
	"testing"

	"github.com/callonbot/callon/store/storetest"
)

// callon chat --demo needs nothing but a database: its team answers,
// asks a question, fans out (the writer after the other two), and uses
// its tool once a person approves; the banner and every answer say that
// a script, not a model, wrote them.
func TestChatDemo(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DATABASE_URL": storetest.URL(t), "LOG_LEVEL": "warn"}
	c := startChat(t, env, "--demo")
	c.waitFor(t, "Team assembled")
	c.say(t, "hi")
	c.waitFor(t, "plan a launch")
	c.say(t, "plan a launch")
	c.waitFor(t, "Which market should the launch reach first")
	c.say(t, "Europe")
	c.waitFor(t, "Here is the launch plan")
	c.say(t, "roll the dice")
	c.waitFor(t, "(answer /approve 1 or /deny 1)")
	c.say(t, "/approve 1")
	c.waitFor(t, "The engineer used the demo tool")
	c.say(t, "/dissolve")
	c.waitFor(t, "Team dissolved")
	got := c.out.String()
	for _, want := range []string{
		"DEMO: a script built into callon plays the team's model",
		"team › 🔐 **engineer** asks to call `demo.roll_dice`",
		"✅ Approved by you",
		"🎲 ",
		"**Timeline** (planner)\n- Week 1",
		"**Announcement** (writer)\n📣",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the demo lacks %q; it printed:\n%s", want, got)
		}
	}
	replies := strings.Count(got, "team › ") - strings.Count(got, "team › 🚀") - strings.Count(got, "team › 🔐") - strings.Count(got, "team › 👋")
	if n := strings.Count(got, "(🎭 Scripted demo: no AI model wrote this."); n != replies || n != 4 {
		t.Errorf("%d answers say they are scripted, of %d; want all 4 (menu, question, plan, dice):\n%s", n, replies, got)
	}
}

// The README's first recipe, as written: its `go run ./cmd/callon …` line
// on a fresh database with nothing but DATABASE_URL, and a reply.
func TestReadmeFirstRecipe(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	first := strings.Index(string(readme), "### 1.")
	if first < 0 {
		t.Fatal(`README.md has no "### 1." recipe`)
	}
	var args []string
	for _, line := range strings.Split(string(readme[first:]), "\n") {
		if cmd, ok := strings.CutPrefix(strings.TrimSpace(line), "go run ./cmd/callon "); ok {
			args = strings.Fields(cmd)
			break
		}
	}
	if len(args) == 0 || args[0] != "chat" {
		t.Fatalf("the first recipe runs %q, want a callon chat", args)
	}
	c := startChat(t, map[string]string{"DATABASE_URL": storetest.URL(t)}, args[1:]...)
	c.waitFor(t, "Team assembled")
	c.say(t, "hi")
	c.waitFor(t, "Scripted demo")
}
