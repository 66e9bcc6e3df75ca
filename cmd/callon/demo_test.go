package main

import (
	"net/url"
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

// The README's first recipe, as written: its commands, one by one, on a
// database as fresh as createdb makes one (no schema), with nothing but
// the DATABASE_URL it exports (its user, password and host this test's),
// gets the demo team's reply.
func TestReadmeFirstRecipe(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, recipe, ok := strings.Cut(string(readme), "### 1.")
	if !ok {
		t.Fatal(`README.md has no "### 1." recipe`)
	}
	_, block, ok := strings.Cut(recipe, "```sh\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("the first recipe has no sh block")
	}
	env := map[string]string{}
	var args []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		line, _, _ = strings.Cut(line, " #")
		line = strings.TrimSpace(line)
		switch {
		case line == "createdb callon":
			// The test's server may hold other databases named callon:
			// a fresh one of its own, empty as createdb leaves it.
			env["fresh"] = storetest.EmptyURL(t)
		case strings.HasPrefix(line, "export DATABASE_URL="):
			recipe, err := url.Parse(strings.Trim(strings.TrimPrefix(line, "export DATABASE_URL="), `'"`))
			if err != nil || recipe.Scheme != "postgres" || recipe.Path != "/callon" {
				t.Fatalf("the recipe's DATABASE_URL %q: %v; want a postgres:// URL of the database callon", line, err)
			}
			fresh, err := url.Parse(env["fresh"])
			if err != nil {
				t.Fatalf("export before createdb, or %v", err)
			}
			// The recipe's database and options; the test server's user,
			// password, host and port for the recipe's USER:PASSWORD@localhost.
			recipe.User, recipe.Host, recipe.Path = fresh.User, fresh.Host, fresh.Path
			env["DATABASE_URL"] = recipe.String()
		case strings.HasPrefix(line, "go run ./cmd/callon "):
			args = strings.Fields(strings.TrimPrefix(line, "go run ./cmd/callon "))
		default:
			t.Fatalf("the first recipe has a step this test does not know how to follow: %q", line)
		}
	}
	if len(args) == 0 || args[0] != "chat" || env["DATABASE_URL"] == "" {
		t.Fatalf("the first recipe runs %q with DATABASE_URL %q; want a callon chat on the database it creates", args, env["DATABASE_URL"])
	}
	delete(env, "fresh")
	c := startChat(t, env, args[1:]...)
	c.waitFor(t, "Team assembled")
	c.say(t, "hi")
	c.waitFor(t, "Scripted demo")
}
