package main

import (
	"strings"
	"sync"
	"testing"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

// embedText is everything an answer's embeds say, for assertions.
func embedText(r discordtest.Response) string {
	var b strings.Builder
	for _, e := range r.Embeds {
		b.WriteString(e.Title + "\n" + e.Description + "\n")
		for _, f := range e.Fields {
			b.WriteString(f.Name + "\n" + f.Value + "\n")
		}
		if e.Footer != nil {
			b.WriteString(e.Footer.Text + "\n")
		}
	}
	return b.String()
}

// command runs a slash command in a channel and returns its final answer.
func (w *world) command(channelID, userID string, perms int64, name string, opts ...discordtest.CommandOption) discordtest.Response {
	w.t.Helper()
	ix := w.dc.SlashCommand(w.t, discordtest.SlashCommand{Name: name, ChannelID: channelID, UserID: userID, Permissions: perms, Options: opts})
	var last discordtest.Response
	w.dc.WaitFor(w.t, func() bool {
		rs := ix.Responses()
		if len(rs) == 0 {
			return false
		}
		last = rs[len(rs)-1]
		return last.Content != "" || len(last.Embeds) > 0
	}, "an answer to /"+name)
	return last
}

func TestTeamCommand(t *testing.T) {
	t.Parallel()
	w := setup(t, nil)
	if r := w.command(w.dc.ChannelID("general"), w.dc.UserID(), 0, "team"); !r.Ephemeral || !strings.Contains(r.Content, "no active team") {
		t.Errorf("/team outside a team thread: %+v, want an ephemeral explanation", r)
	}
	thread := w.team("Ship it")
	r := w.command(thread, w.dc.AddUser("bob"), 0, "team")
	if !r.Ephemeral || len(r.Embeds) != 1 {
		t.Fatalf("/team: %+v, want one ephemeral embed", r)
	}
	text := embedText(r)
	for _, want := range []string{"Ship it", "researcher", "gpt-4o-mini", "idle", "Tokens used"} {
		if !strings.Contains(text, want) {
			t.Errorf("/team lacks %q:\n%s", want, text)
		}
	}
}

func TestReplanCommand(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	w := setup(t, llmtest.Switch(
		llmtest.Match("You reorganize a team", llmtest.Seq(llmtest.Call("replan", map[string]any{
			"reason": "no more writing needed",
			"roles": []map[string]string{
				{"name": "researcher", "description": "finds facts"},
				{"name": "engineer", "description": "builds it"},
				{"name": "sre", "description": "runs it in production"},
			}}))),
		llmtest.Match(masterPrompt, llmtest.Seq(
			delegate(task{Role: "researcher", Instruction: "research"}, task{Role: "writer", Instruction: "write", DependsOn: []int{0}}),
			reply("Done without the writer."))),
		llmtest.Match("You are the researcher", func(llmtest.Request) llmtest.Reply { <-release; return report("RESEARCH") })),
		"CALLON_CONCURRENT_TASKS", "1")
	t.Cleanup(free)
	thread := w.team("Replan me")
	msg := w.say(thread, "go")
	w.dc.WaitFor(t, func() bool { return len(workerRequests(w.ai.Requests(), "researcher")) == 1 }, "the researcher to start")

	owner := w.dc.UserID()
	if r := w.command(thread, w.dc.AddUser("mallory"), 0, "replan"); !r.Ephemeral || !strings.Contains(r.Content, "Only the person who started") {
		t.Errorf("/replan by a stranger: %+v, want an ephemeral refusal", r)
	}
	r := w.command(thread, owner, 0, "replan", discordtest.StringOption("instruction", "drop the writer, add an SRE"))
	if !r.Ephemeral || !strings.Contains(r.Content, "sre") || !strings.Contains(r.Content, "writer") {
		t.Errorf("/replan answer = %+v, want what changed", r)
	}
	w.dc.WaitFor(t, func() bool {
		for _, m := range w.botMessages(thread) {
			if strings.HasPrefix(m.Content, "🔁 **Team reorganized**") && strings.Contains(m.Content, "➕ Added: **sre**") && strings.Contains(m.Content, "➖ Removed: **planner**, **writer**") {
				return true
			}
		}
		return false
	}, "the replan notice in the thread")
	free()
	if got := w.waitReply(thread, msg); got != "Done without the writer." {
		t.Errorf("reply = %q", got)
	}
	if n := len(workerRequests(w.ai.Requests(), "writer")); n != 0 {
		t.Errorf("the removed writer's queued task ran %d times, want it cancelled", n)
	}
	last := w.ai.Requests()[len(w.ai.Requests())-1].Request
	if res := toolResults(last); !strings.Contains(res, "RESEARCH") || !strings.Contains(res, "writer: cancelled") {
		t.Errorf("after /replan the master saw:\n%s\nwant the finished result kept and the writer cancelled", res)
	}
}

func TestDissolveDuringARunningTurn(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(delegate(task{Role: "researcher", Instruction: "forever"}))),
		llmtest.Match("You are the researcher", llmtest.Seq(llmtest.Hang()))))
	thread := w.team("Dissolve me")
	msg := w.say(thread, "work hard")
	w.dc.WaitFor(t, func() bool { return len(workerRequests(w.ai.Requests(), "researcher")) == 1 }, "the researcher to start")

	if r := w.command(thread, w.dc.AddUser("mallory"), 0, "dissolve"); !strings.Contains(r.Content, "Only the person who started") {
		t.Fatalf("/dissolve by a stranger: %+v, want a refusal", r)
	}
	// A moderator who can manage threads may dissolve someone else's team.
	const manageThreads = 1 << 34
	if r := w.dissolve(thread, w.dc.AddUser("mod"), manageThreads); !strings.Contains(r, "dissolved") {
		t.Fatalf("/dissolve by a moderator: %+v", r)
	}
	w.dc.WaitFor(t, func() bool {
		recs := workerRequests(w.ai.Requests(), "researcher")
		return len(recs) == 1 && recs[0].Status == llmtest.StatusClientGone
	}, "the worker's model call to be cancelled")
	w.dc.WaitFor(t, func() bool { ch, _ := w.dc.Channel(thread); return ch.Archived }, "the thread to be archived")
	msgs := w.botMessages(thread)
	if !strings.HasPrefix(msgs[len(msgs)-1].Content, "👋 **Team dissolved**") {
		t.Errorf("last message = %q, want the closing summary", msgs[len(msgs)-1].Content)
	}
	if len(w.reply(thread, msg)) != 0 {
		t.Error("the turn in flight posted a reply")
	}
	if !hasSignal(w.signals(thread), "TASK_COMPLETE", `"state":"cancelled"`) {
		t.Error("the running task did not end cancelled")
	}
	// The thread is dead: a new message starts nothing.
	before := len(w.ai.Requests())
	w.dc.ArchiveThread(thread) // posting unarchives on Discord; the fake keeps it simple
	later := w.say(thread, "hello?")
	if r := w.command(w.dc.ChannelID("general"), w.dc.UserID(), 0, "team"); r.Content == "" {
		t.Fatal("no answer to /team") // a round trip through the bot after the message
	}
	if n := len(w.ai.Requests()); n != before || len(w.reply(thread, later)) != 0 {
		t.Errorf("a message after /dissolve started a turn (%d model calls, want %d)", n, before)
	}
}

func TestDissolveStopsWorkersInAnotherProcess(t *testing.T) {
	t.Parallel()
	// The bot process runs no workers: a `callon worker` process does.
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(delegate(task{Role: "researcher", Instruction: "forever"}))),
		llmtest.Match("You are the researcher", llmtest.Seq(llmtest.Hang()))),
		"CALLON_CONCURRENT_TASKS", "0")
	worker := w.startWorker()
	thread := w.team("Across processes")
	w.say(thread, "work hard")
	w.dc.WaitFor(t, func() bool { return len(workerRequests(w.ai.Requests(), "researcher")) == 1 }, "the other process's worker to start")
	if r := w.dissolve(thread, w.dc.UserID(), 0); !strings.Contains(r, "dissolved") {
		t.Fatalf("/dissolve: %+v", r)
	}
	w.dc.WaitFor(t, func() bool {
		return workerRequests(w.ai.Requests(), "researcher")[0].Status == llmtest.StatusClientGone
	}, "the worker in the other process to stop")
	worker()
}

// dissolve runs /dissolve as a member and confirms it with the button,
// and returns what the member read in the end.
func (w *world) dissolve(channelID, userID string, perms int64) string {
	w.t.Helper()
	ix := w.dc.SlashCommand(w.t, discordtest.SlashCommand{Name: "dissolve", ChannelID: channelID, UserID: userID, Permissions: perms})
	var confirm discordtest.Message
	w.dc.WaitFor(w.t, func() bool {
		m, ok := ix.Original()
		confirm = m
		return ok && (len(m.Buttons()) > 0 || m.Content != "")
	}, "the /dissolve confirmation")
	var id string
	for _, b := range confirm.Buttons() {
		if strings.HasPrefix(b.CustomID, "dissolve:") {
			id = b.CustomID
		}
	}
	if id == "" {
		return confirm.Content // refused before any button
	}
	w.dc.ClickButton(w.t, discordtest.ClickButton{MessageID: confirm.ID, CustomID: id, ChannelID: channelID, UserID: userID, Permissions: perms})
	var final string
	w.dc.WaitFor(w.t, func() bool {
		m, _ := ix.Original()
		final = m.Content
		return len(m.Buttons()) == 0 && !strings.HasPrefix(m.Content, "Dissolve the team")
	}, "the team dissolved")
	return final
}
