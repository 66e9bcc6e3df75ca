package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

var tokenRE = regexp.MustCompile(`tok-[0-9a-z-]+`)

// echoTeam is a model whose master delegates each message to the
// researcher, then answers "answer <token>" with the message's token.
func echoTeam() llmtest.Script {
	coordinator := func(r llmtest.Request) llmtest.Reply {
		tok := tokenRE.FindString(r.LastUser())
		if len(r.ToolResults()) > 0 {
			return reply("answer " + tok)
		}
		return delegate(task{Role: "researcher", Instruction: "look into " + tok})
	}
	return llmtest.Switch(
		llmtest.Match(masterPrompt, coordinator),
		llmtest.Match("You are the researcher", llmtest.Always(report("found"))))
}

// acceptedIdentifies counts the IDENTIFYs answered with READY.
func acceptedIdentifies(dc *discordtest.Server) int {
	n := 0
	for _, id := range dc.IdentifyLog() {
		if id.CloseCode == 0 {
			n++
		}
	}
	return n
}

// sent is a message a test posted, and the thread it is in.
type sent struct {
	thread string
	msg    discordtest.Message
}

// sayEverywhere posts one message in each thread, each with its token.
func (w *world) sayEverywhere(threads []string, round string) []sent {
	var out []sent
	for i, th := range threads {
		out = append(out, sent{th, w.say(th, fmt.Sprintf("question tok-%s-%d", round, i))})
	}
	return out
}

// waitAnswered waits for each message's reply and checks it answers it.
func (w *world) waitAnswered(msgs []sent) {
	w.t.Helper()
	for _, s := range msgs {
		want := "answer " + tokenRE.FindString(s.msg.Content)
		if got := w.waitReply(s.thread, s.msg); got != want {
			w.t.Errorf("reply to %q = %q, want %q", s.msg.Content, got, want)
		}
	}
}

// Two callon processes and a callon worker on one database, both callons
// connected to the gateway's one shard, so both see every event: every
// message of every session is answered exactly once, through the SIGKILL
// of one callon and then the graceful stop of the other while a new one
// takes over (a rolling restart).
func TestSeveralProcessesAnswerOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t, discordtest.New(t), echoTeam())
	kill := w.spawn()
	w.dc.WaitConnected(t)
	w.dc.WaitFor(t, func() bool { return len(w.dc.Commands("")) == commandCount }, "the commands registered")
	stopB := w.process(nil)
	w.process([]string{"worker"}, "CALLON_CONCURRENT_TASKS", "2")
	w.dc.WaitFor(t, func() bool { return acceptedIdentifies(w.dc) == 2 }, "both callons on the gateway")

	threads := []string{w.team("Scale one"), w.team("Scale two"), w.team("Scale three")}
	var all []sent
	both := w.sayEverywhere(threads, "both")
	w.waitAnswered(both)
	all = append(all, both...)

	// A dies at once, perhaps holding a master lease, a task or an
	// outbox claim: B and the worker carry on.
	killed := w.sayEverywhere(threads, "killed")
	kill()
	w.waitAnswered(killed)
	all = append(all, killed...)

	// Rolling restart: a new process joins, then B stops gracefully.
	w.spawn()
	w.dc.WaitFor(t, func() bool { return acceptedIdentifies(w.dc) == 3 }, "the new callon on the gateway")
	rolled := w.sayEverywhere(threads, "rolled")
	stopB()
	w.waitAnswered(rolled)
	all = append(all, rolled...)

	for _, s := range all {
		if n := len(w.reply(s.thread, s.msg)); n != 1 {
			t.Errorf("%q got %d replies, want 1", s.msg.Content, n)
		}
	}
	perThread := len(all) / len(threads)
	for _, th := range threads {
		replies, statuses := 0, 0
		for _, m := range w.botMessages(th) {
			switch {
			case strings.HasPrefix(m.Content, "answer "):
				replies++
			case isStatus(m):
				statuses++
			}
		}
		if replies != perThread {
			t.Errorf("thread %s has %d replies, want %d", th, replies, perThread)
		}
		// Every process runs the status presenter; a status message is
		// posted with its turn's nonce, so there is at most one per turn.
		if statuses > perThread {
			t.Errorf("thread %s has %d status messages for %d messages", th, statuses, perThread)
		}
	}
}
