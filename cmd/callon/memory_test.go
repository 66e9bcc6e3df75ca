package main

import (
	"strings"
	"testing"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
	"github.com/callonbot/callon/master"
)

const launchNote = "The launch date is March 3, decided with Dana"

// A note one team's master remembers is in the next team's master prompt
// in the same channel, and in the prompt of a task it bears on, but in no
// prompt of another channel's team; /memory forget removes it from every
// prompt after, and /memory needs Manage Channels.
func TestMemoryAcrossTeams(t *testing.T) {
	t.Parallel()
	var steps []llmtest.Script
	steps = append(steps,
		// Team 1 in #general remembers, then replies.
		func(llmtest.Request) llmtest.Reply {
			return llmtest.Call("remember", map[string]string{"note": launchNote})
		},
		func(r llmtest.Request) llmtest.Reply {
			if last := r.Messages[len(r.Messages)-1]; !strings.Contains(last.Content, "Remembered as note") {
				return llmtest.Unexpected("remember's result: %q", last.Content)
			}
			return reply("Noted.")
		},
		// Team 2 in #general delegates a task the note bears on.
		func(llmtest.Request) llmtest.Reply {
			return delegate(task{Role: "planner", Instruction: "Plan the launch week backwards from the launch date"})
		},
		func(llmtest.Request) llmtest.Reply { return reply("Plan ready.") },
		// Team 3 in #random.
		func(llmtest.Request) llmtest.Reply { return reply("Hello from random.") },
		// Team 2 again, after /memory forget.
		func(llmtest.Request) llmtest.Reply { return reply("Still here.") },
	)
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(steps...)),
		llmtest.Match("You are the planner", llmtest.Seq(report("Week plan.")))))

	first := w.teamIn("general", "Prepare the launch")
	if got := w.waitReply(first, w.say(first, "The launch is March 3, Dana and I agreed.")); got != "Noted." {
		t.Fatalf("first reply = %q", got)
	}
	second := w.teamIn("general", "Launch week")
	w.waitReply(second, w.say(second, "Plan the week"))
	other := w.teamIn("random", "Something else")
	w.waitReply(other, w.say(other, "hi"))

	var masters, planners []llmtest.Request
	for _, rec := range w.ai.Requests() {
		r := rec.Request
		switch {
		case strings.Contains(r.System(), masterPrompt):
			masters = append(masters, r)
		case strings.Contains(r.System(), "You are the planner"):
			planners = append(planners, r)
		}
	}
	if len(masters) != 5 || len(planners) != 1 {
		t.Fatalf("got %d master and %d planner requests, want 5 and 1", len(masters), len(planners))
	}
	quoted := `"` + launchNote + `"`
	if strings.Contains(masters[0].System(), quoted) {
		t.Error("the note is in the prompt of the turn that had not written it yet")
	}
	for i, want := range []bool{false, false, true, true, false} {
		if got := strings.Contains(masters[i].System(), quoted); got != want {
			t.Errorf("master request %d has the note: %v, want %v\n%s", i, got, want, masters[i].System())
		}
	}
	if !strings.Contains(planners[0].System(), quoted) {
		t.Errorf("the planner's task about the launch date was not given the note:\n%s", planners[0].System())
	}

	// /memory: Manage Channels only, ephemeral; show lists the note with
	// its number, forget removes it everywhere.
	general := w.dc.ChannelID("general")
	if r := w.command(general, w.dc.AddUser("bob"), 0, "memory", discordtest.Subcommand("show")); !r.Ephemeral ||
		!strings.Contains(r.Content, "Only members who can manage this channel") {
		t.Errorf("/memory show by a member: %+v, want an ephemeral refusal", r)
	}
	shown := w.command(second, w.dc.UserID(), master.PermManageChannels, "memory", discordtest.Subcommand("show"))
	if !shown.Ephemeral || !strings.Contains(shown.Content, launchNote) || !strings.Contains(shown.Content, "**1**") {
		t.Fatalf("/memory show in a team's thread: %+v, want the channel's note, numbered", shown)
	}
	if r := w.command(w.dc.ChannelID("random"), w.dc.UserID(), master.PermManageChannels, "memory", discordtest.Subcommand("show")); strings.Contains(r.Content, launchNote) {
		t.Errorf("/memory show in #random lists #general's note: %q", r.Content)
	}
	forgot := w.command(general, w.dc.UserID(), master.PermManageChannels, "memory",
		discordtest.Subcommand("forget", discordtest.IntegerOption("note", 1)))
	if !strings.Contains(forgot.Content, "Note 1 forgotten") {
		t.Fatalf("/memory forget: %+v", forgot)
	}
	w.waitReply(second, w.say(second, "Anything else?"))
	last := w.ai.Requests()
	if r := last[len(last)-1].Request; !strings.Contains(r.System(), masterPrompt) || strings.Contains(r.System(), launchNote) {
		t.Errorf("after /memory forget, the team's master still reads the note:\n%s", r.System())
	}
	if got := w.count(`SELECT count(*) FROM memory_changes WHERE action = 'forget' AND by_user = $1`, w.dc.UserID()); got != 1 {
		t.Errorf("the audit trail has %d forgets by the admin, want 1", got)
	}
	if got := w.count(`SELECT count(*) FROM memory_changes WHERE action = 'remember' AND session_id IS NOT NULL`); got != 1 {
		t.Errorf("the audit trail has %d remembers by a master, want 1", got)
	}
}
