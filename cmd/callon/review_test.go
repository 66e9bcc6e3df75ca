package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

// reviewerPrompt starts the reviewer's system prompt.
const reviewerPrompt = "You check a team's draft reply"

func verdict(decision string, objections ...string) llmtest.Reply {
	args := map[string]any{"decision": decision}
	if len(objections) > 0 {
		args["objections"] = objections
	}
	return llmtest.Call("verdict", args)
}

// teamWith runs /callon in #general with more options and returns the
// thread once its kickoff is in it.
func (w *world) teamWith(goal string, opts ...discordtest.CommandOption) string {
	w.t.Helper()
	general := w.dc.ChannelID("general")
	before := len(w.dc.Threads(general))
	ix := w.dc.SlashCommand(w.t, discordtest.SlashCommand{Name: "callon", ChannelID: general,
		Options: append([]discordtest.CommandOption{discordtest.StringOption("goal", goal)}, opts...)})
	w.dc.WaitFor(w.t, func() bool {
		m, ok := ix.Original()
		return ok && strings.Contains(m.Content, "is ready in")
	}, "/callon to answer with the thread")
	thread := w.dc.Threads(general)[before].ID
	w.dc.WaitFor(w.t, func() bool { return len(w.botMessages(thread)) >= 1 }, "the kickoff message")
	return thread
}

// writeRolesFile writes a roles file for a test and returns its path.
func writeRolesFile(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "roles.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// requests splits the model's requests by whom they were for.
func (w *world) requestsFor(prefix string) []llmtest.Request {
	var out []llmtest.Request
	for _, rec := range w.ai.Requests() {
		if strings.Contains(rec.Request.System(), prefix) {
			out = append(out, rec.Request)
		}
	}
	return out
}

// A reviewer's objection sends the merged draft back once: the master
// revises it, the revision is posted (never the draft), with no second
// review, each call counted; a direct answer is not reviewed with review
// on; the verdicts are signals that /team shows.
func TestReviewerRevisesOnce(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply {
				return delegate(task{Role: "researcher", Instruction: "Count the moons"})
			},
			func(llmtest.Request) llmtest.Reply { return reply("Draft: Jupiter has 41 moons.") },
			func(r llmtest.Request) llmtest.Reply {
				last := r.Messages[len(r.Messages)-1]
				if !strings.Contains(last.Content, "The results say 95, not 41") || len(r.Tools) != 1 || r.Tools[0].Name != "reply" {
					return llmtest.Unexpected("revision request: %q with %d tools", last.Content, len(r.Tools))
				}
				return reply("Jupiter has 95 known moons.")
			},
			func(llmtest.Request) llmtest.Reply { return reply("Hello!") })),
		llmtest.Match(reviewerPrompt, llmtest.SeqFunc(func(r llmtest.Request) llmtest.Reply {
			if u := r.LastUser(); !strings.Contains(u, "95 moons confirmed") || !strings.Contains(u, "Draft: Jupiter has 41 moons.") {
				return llmtest.Unexpected("the reviewer does not see the results and the draft: %q", u)
			}
			return verdict("revise", "The results say 95, not 41")
		})),
		llmtest.Match("You are the researcher", llmtest.Seq(report("95 moons confirmed")))))
	thread := w.teamWith("Moons", discordtest.StringOption("review", "on"))
	msg := w.say(thread, "How many moons has Jupiter?")
	if got := w.waitReply(thread, msg); got != "Jupiter has 95 known moons." {
		t.Fatalf("reply = %q, want the revision", got)
	}
	hello := w.say(thread, "hi")
	if got := w.waitReply(thread, hello); got != "Hello!" {
		t.Fatalf("direct answer = %q", got)
	}
	if n := len(w.requestsFor(reviewerPrompt)); n != 1 {
		t.Errorf("the reviewer was called %d times, want once (a direct answer is not reviewed with review on)", n)
	}
	for _, m := range w.botMessages(thread) {
		if strings.Contains(m.Content, "41 moons") {
			t.Errorf("the draft reached the thread: %q", m.Content)
		}
	}
	if n := w.count(`SELECT count(*) FROM signals WHERE kind = 'REVIEW_REVISED'`); n != 1 {
		t.Errorf("%d REVIEW_REVISED signals, want 1", n)
	}
	if n := w.count(`SELECT max(master_calls) FROM turns`); n != 4 {
		t.Errorf("the reviewed turn counted %d model calls, want 4 (delegate, merge, review, revision)", n)
	}
	team := embedText(w.command(thread, w.dc.UserID(), 0, "team"))
	for _, want := range []string{"Review: on (merged replies) · 0 passed, 1 sent back", "the reviewer sent the reply back (1 objection)",
		"1 reviewed, 1 sent back"} {
		if !strings.Contains(team, want) {
			t.Errorf("/team lacks %q:\n%s", want, team)
		}
	}
}

// A process killed while the reviewer judges a draft leaves the draft in
// its row: the process that takes the team over asks the reviewer again
// about that draft (the master does not decide the reply again), and the
// reply is posted once.
func TestReviewSurvivesAKill(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	held := make(chan struct{})
	release := make(chan struct{})
	first := true
	w := newWorld(t, discordtest.New(t), llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply { return delegate(task{Role: "researcher", Instruction: "look"}) },
			func(llmtest.Request) llmtest.Reply { return reply("The drafted answer.") })),
		llmtest.Match(reviewerPrompt, func(llmtest.Request) llmtest.Reply {
			mu.Lock()
			wait := first
			first = false
			mu.Unlock()
			if wait {
				close(held)
				<-release
			}
			return verdict("pass")
		}),
		llmtest.Match("You are the researcher", llmtest.Always(report("found")))),
		"CALLON_ROLES_FILE", writeRolesFile(t, "review: on\n"))
	kill := w.spawn()
	w.dc.WaitConnected(t)
	w.dc.WaitFor(t, func() bool { return len(w.dc.Commands("")) == commandCount }, "the commands registered")
	thread := w.team("Reviewed")
	msg := w.say(thread, "go")
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the first process never reached the reviewer")
	}
	if n := w.count(`SELECT count(*) FROM turn_reviews WHERE state = 'reviewing' AND draft = 'The drafted answer.'`); n != 1 {
		t.Fatalf("%d drafts saved before the reviewer's call, want 1", n)
	}
	w.start()
	kill()
	close(release)
	if got := w.waitReply(thread, msg); got != "The drafted answer." {
		t.Fatalf("reply = %q", got)
	}
	if n := len(w.reply(thread, msg)); n != 1 {
		t.Errorf("got %d replies, want 1", n)
	}
	if n := len(w.requestsFor(masterPrompt)); n != 2 {
		t.Errorf("the master was called %d times, want 2: the draft was not decided again", n)
	}
	if n := len(w.requestsFor(reviewerPrompt)); n != 2 {
		t.Errorf("the reviewer was called %d times, want 2 (the dead process's, then the survivor's)", n)
	}
	if n := w.count(`SELECT count(*) FROM signals WHERE kind = 'REVIEW_PASSED'`); n != 1 {
		t.Errorf("%d REVIEW_PASSED signals, want 1", n)
	}
}
