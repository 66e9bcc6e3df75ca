package main

import (
	"strings"
	"sync"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

func TestCallonOpensPublicThreadWithKickoff(t *testing.T) {
	t.Parallel()
	w := setup(t, nil)
	thread := w.team("Ship the v2 onboarding flow")
	ch, ok := w.dc.Channel(thread)
	if !ok || ch.Type != discordgo.ChannelTypeGuildPublicThread || ch.ParentID != w.dc.ChannelID("general") {
		t.Fatalf("thread = %+v, want a public thread (type 11) in #general", ch)
	}
	if ch.Name != "Ship the v2 onboarding flow" {
		t.Errorf("thread name = %q, want it named from the goal", ch.Name)
	}
	kickoff := w.botMessages(thread)[0].Content
	for _, want := range []string{"Ship the v2 onboarding flow", "researcher", "planner", "engineer", "writer", "reviewer"} {
		if !strings.Contains(kickoff, want) {
			t.Errorf("kickoff lacks %q:\n%s", want, kickoff)
		}
	}
	if n := len(w.ai.Requests()); n != 0 {
		t.Errorf("starting a team made %d model calls, want 0", n)
	}
}

func TestCallonRefusals(t *testing.T) {
	t.Parallel()
	w := setup(t, nil)
	general := w.dc.ChannelID("general")
	ask := func(channel, goal string) discordtest.Response {
		t.Helper()
		ix := w.dc.SlashCommand(t, discordtest.SlashCommand{Name: "callon", ChannelID: channel,
			Options: []discordtest.CommandOption{discordtest.StringOption("goal", goal)}})
		var last discordtest.Response
		w.dc.WaitFor(t, func() bool {
			rs := ix.Responses()
			if len(rs) == 0 {
				return false
			}
			last = rs[len(rs)-1]
			return last.Content != ""
		}, "an answer to /callon")
		return last
	}
	if r := ask(general, "   "); !r.Ephemeral || !strings.Contains(r.Content, "give the team a goal") {
		t.Errorf("blank goal: got %+v, want an ephemeral explanation", r)
	}
	if r := ask(general, strings.Repeat("x", 1001)); !r.Ephemeral || !strings.Contains(r.Content, "under 1000") {
		t.Errorf("oversized goal: got %+v, want an ephemeral explanation", r)
	}
	thread := w.team("First goal")
	if r := ask(thread, "Second goal"); !r.Ephemeral || !strings.Contains(r.Content, "already has an active team") {
		t.Errorf("second /callon in a team thread: got %+v, want an ephemeral explanation", r)
	}
	if n := len(w.dc.Threads(general)); n != 1 {
		t.Errorf("got %d threads, want only the first team's", n)
	}
}

func TestCallonBindsExistingThread(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(reply("bound!")))))
	thread := w.dc.AddThread(w.dc.ChannelID("general"), "existing discussion", discordgo.ChannelTypeGuildPublicThread).ID
	ix := w.dc.SlashCommand(t, discordtest.SlashCommand{Name: "callon", ChannelID: thread,
		Options: []discordtest.CommandOption{discordtest.StringOption("goal", "Use this thread")}})
	w.dc.WaitFor(t, func() bool {
		m, ok := ix.Original()
		return ok && strings.Contains(m.Content, "is ready in <#"+thread+">")
	}, "the binding")
	msg := w.say(thread, "hello")
	if got := w.waitReply(thread, msg); got != "bound!" {
		t.Errorf("reply = %q", got)
	}
	if n := len(w.dc.Threads(w.dc.ChannelID("general"))); n != 1 {
		t.Errorf("binding created threads: %d, want only the existing one", n)
	}
}

func TestStatusMessageWhileTeamWorks(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(
			delegate(task{Role: "researcher", Instruction: "dig"}, task{Role: "writer", Instruction: "draft"}),
			reply("Done."))),
		llmtest.Match("", func(r llmtest.Request) llmtest.Reply {
			<-release
			return report("SECRET-RESULT")
		})))
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	thread := w.team("Visible work")
	msg := w.say(thread, "go")
	// The status message may first show the turn before its round is
	// delegated (a slow master); it is edited as the round starts.
	var status discordtest.Message
	w.dc.WaitFor(t, func() bool {
		for _, m := range w.botMessages(thread) {
			if strings.HasPrefix(m.Content, "⏳") {
				status = m
				return strings.Contains(m.Content, "researcher") && strings.Contains(m.Content, "writer")
			}
		}
		return false
	}, "a status message naming the researcher and the writer")
	if status.Reference != nil {
		t.Error("the status message replies to the user's message; want a plain message")
	}
	w.dc.WaitFor(t, func() bool { return w.dc.Typing(thread) > 0 }, "the typing indicator")
	once.Do(func() { close(release) })
	w.waitReply(thread, msg)
	w.dc.WaitFor(t, func() bool {
		m, _ := w.dc.Message(thread, status.ID)
		return strings.HasPrefix(m.Content, "✅ Done in")
	}, "the status message to settle")
	for _, m := range w.botMessages(thread) {
		for _, text := range append(m.History, m.Content) {
			if strings.Contains(text, "SECRET-RESULT") {
				t.Errorf("a worker result reached the thread: %q", text)
			}
		}
	}
}
