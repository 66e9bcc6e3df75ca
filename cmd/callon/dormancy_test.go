package main

import (
	"strings"
	"testing"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

// dormant reports whether a thread's team is dormant.
func (w *world) dormant(thread string) bool {
	return w.count(`SELECT count(*) FROM sessions WHERE thread_id = $1 AND state = 'active' AND dormant_since IS NOT NULL`, thread) == 1
}

// Teams idle for CALLON_SESSION_IDLE go dormant and stop counting against
// the caps: a refusal at a cap names the person's oldest teams; /team
// shows a dormant team as such; a message wakes it within the caps only;
// an archived thread's team goes dormant; and after a restart, a dormant
// thread with news is caught up (and its team woken) though dormant
// threads are not read at every READY.
func TestDormantTeams(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, func(r llmtest.Request) llmtest.Reply {
		return reply("answer to " + r.LastUser())
	})), "CALLON_SESSION_IDLE", "2s", "CALLON_MAX_USER_SESSIONS", "1")
	first := w.team("First")
	if got := w.waitReply(first, w.say(first, "hello")); !strings.Contains(got, "hello") {
		t.Fatalf("reply %q", got)
	}
	// At the cap, /callon names the team that holds the slot.
	ix := w.dc.SlashCommand(t, discordtest.SlashCommand{Name: "callon", ChannelID: w.dc.ChannelID("general"),
		Options: []discordtest.CommandOption{discordtest.StringOption("goal", "Second")}})
	var refusal string
	w.dc.WaitFor(t, func() bool { m, ok := ix.Original(); refusal = m.Content; return ok && m.Content != "" }, "/callon's refusal")
	mustContain(t, "the refusal at the cap", refusal, "You already run 1 active teams", "Your oldest active teams:", "<#"+first+">: First")

	w.dc.WaitFor(t, func() bool { return w.dormant(first) }, "the idle team to go dormant")
	mustContain(t, "/team of a dormant team", embedText(w.command(first, w.dc.UserID(), 0, "team")), "💤 **Dormant** since")
	second := w.team("Second") // the dormant team no longer holds the slot
	// Waking the first would go over the cap: the message is refused, and
	// the thread says why, naming the team that holds the slot.
	w.say(first, "are you there?")
	w.dc.WaitFor(t, func() bool {
		msgs := w.botMessages(first)
		return strings.Contains(msgs[len(msgs)-1].Content, "This team is dormant, and it cannot wake up now")
	}, "the notice that the team cannot wake")
	msgs := w.botMessages(first)
	mustContain(t, "the wake refusal", msgs[len(msgs)-1].Content, "<#"+second+">: Second")
	if !w.dormant(first) || w.count(`SELECT count(*) FROM turns WHERE content LIKE '%are you there%' AND state = 'refused'`) != 1 {
		t.Fatalf("the message woke the team beyond the cap")
	}
	// Once the second sleeps, a message wakes the first and is answered.
	w.dc.WaitFor(t, func() bool { return w.dormant(second) }, "the second team to go dormant")
	if got := w.waitReply(first, w.say(first, "now?")); !strings.Contains(got, "now?") {
		t.Errorf("the woken team's reply is %q", got)
	}
	if w.dormant(first) {
		t.Error("the team is still dormant after answering")
	}
	// Discord archiving the thread puts its team to sleep.
	w.dc.ArchiveThread(first)
	w.dc.WaitFor(t, func() bool { return w.dormant(first) }, "the archived thread's team to go dormant")

	// While callon is down, someone writes in the dormant thread (which
	// unarchives it): the next READY catches it up, and only that thread
	// is read.
	w.stop()
	late := w.say(first, "while you were away")
	reads := w.dc.Calls(discordtest.RouteListMessages)
	w.start()
	if got := w.waitReply(first, late); !strings.Contains(got, "while you were away") {
		t.Errorf("the caught-up reply is %q", got)
	}
	if n := w.dc.Calls(discordtest.RouteListMessages) - reads; n != 1 {
		t.Errorf("the catch-up read %d threads' messages, want 1: the dormant one with news (the other dormant one has none)", n)
	}
}
