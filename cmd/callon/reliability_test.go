package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store/storetest"
)

// A worker that needs information twice in one turn: the master asks the
// user each time, the user answers each time, and the same turn goes on.
// Each question is posted once, the turn ends with one reply, and the
// model is called exactly as often as the story needs.
func TestTwoQuestionsInOneTurn(t *testing.T) {
	t.Parallel()
	ask := func(q string) llmtest.Reply { return llmtest.Call("ask_user", map[string]any{"question": q}) }
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(
			delegate(task{Role: "planner", Instruction: "plan the offsite"}),
			ask("How many people?"),
			ask("Which city?"),
			reply("Plan for 12 people in Lyon."),
			reply("Anything else?"))),
		llmtest.Match("You are the planner", llmtest.Seq(
			needInfo("How many people?"),
			needInfo("Which city?"),
			report("PLAN-12-LYON")))))
	thread := w.team("Offsite")
	msg := w.say(thread, "plan our offsite")
	if got := w.waitReply(thread, msg); got != "How many people?" {
		t.Fatalf("first answer = %q, want the first question", got)
	}
	w.say(thread, "12 of us")
	w.dc.WaitFor(t, func() bool { return w.lastBotMessage(thread) == "Which city?" }, "the second question")
	w.say(thread, "Lyon")
	w.dc.WaitFor(t, func() bool { return w.lastBotMessage(thread) == "Plan for 12 people in Lyon." }, "the plan")
	count := map[string]int{}
	for _, m := range w.botMessages(thread) {
		count[m.Content]++
	}
	for _, text := range []string{"How many people?", "Which city?", "Plan for 12 people in Lyon."} {
		if count[text] != 1 {
			t.Errorf("%q posted %d times, want once", text, count[text])
		}
	}
	if n := len(w.ai.Requests()); n != 7 {
		t.Errorf("got %d model calls, want 7 (master, planner, master, planner, master, planner, master)", n)
	}
	// The thread is not wedged: the next message is answered.
	next := w.say(thread, "thanks")
	if got := w.waitReply(thread, next); got != "Anything else?" {
		t.Errorf("reply to the next message = %q", got)
	}
}

// A model answer that Postgres cannot store as it is (a NUL byte) is
// cleaned, not looped on.
func TestModelTextWithNULIsStored(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(reply("before\x00after")))))
	thread := w.team("NUL")
	msg := w.say(thread, "hi")
	if got := w.waitReply(thread, msg); !strings.HasPrefix(got, "before") || !strings.HasSuffix(got, "after") || strings.ContainsRune(got, 0) {
		t.Errorf("reply = %q, want the text without its NUL", got)
	}
	if n := len(w.ai.Requests()); n != 1 {
		t.Errorf("got %d model calls, want 1", n)
	}
}

// lastBotMessage is the content of the bot's latest message in a channel
// that is not a status message.
func (w *world) lastBotMessage(channelID string) string {
	msgs := w.botMessages(channelID)
	for i := len(msgs) - 1; i >= 0; i-- {
		if !isStatus(msgs[i]) {
			return msgs[i].Content
		}
	}
	return ""
}

// Messages posted while callon is stopped are answered when it starts
// again, in the order they were posted.
func TestMessagesPostedWhileAwayAreAnswered(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.SeqFunc(
		echoLast, echoLast, echoLast, echoLast))))
	thread := w.team("Away")
	first := w.say(thread, "one")
	if got := w.waitReply(thread, first); got != "re: one" {
		t.Fatalf("reply = %q", got)
	}
	w.stop()
	msgs := []discordtest.Message{w.say(thread, "two"), w.say(thread, "three"), w.say(thread, "four")}
	w.start()
	for _, m := range msgs {
		if got := w.waitReply(thread, m); got != "re: "+m.Content {
			t.Errorf("reply to %q = %q", m.Content, got)
		}
	}
	var order []string
	for _, r := range w.ai.Requests() {
		order = append(order, strings.TrimPrefix(r.Request.LastUser(), "<@"+w.dc.UserID()+">: "))
	}
	if got := strings.Join(order, ","); got != "one,two,three,four" {
		t.Errorf("master saw %s, want one,two,three,four: turns are answered in Discord's order", got)
	}
}

// echoLast replies "re: <the user's message>".
func echoLast(r llmtest.Request) llmtest.Reply {
	_, text, _ := strings.Cut(r.LastUser(), ": ")
	return reply("re: " + text)
}

// A gateway session that cannot be resumed loses the dispatches sent
// meanwhile; the catch-up after the new session's READY finds them.
func TestMessagesLostWithTheGatewaySessionAreAnswered(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.SeqFunc(echoLast, echoLast))))
	thread := w.team("Invalid session")
	first := w.say(thread, "one")
	w.waitReply(thread, first)
	identifies := w.dc.GatewayStats().Identifies
	w.dc.DropGateway()
	lost := w.say(thread, "two") // queued for a resume that will fail
	w.dc.InvalidateSession()
	w.dc.WaitFor(t, func() bool { return w.dc.GatewayStats().Identifies > identifies }, "a new gateway session")
	if got := w.waitReply(thread, lost); got != "re: two" {
		t.Errorf("reply = %q", got)
	}
}

// A flood of messages posted while away starts at most CatchUpMax turns;
// the rest are refused with one notice, and never picked up later. (The
// thread's queue and the author's rate are lifted here;
// TestCatchUpKeepsToTheQueue shows the defaults.)
func TestCatchUpIsBounded(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Always(reply("ok")))),
		"CALLON_MAX_QUEUED_TURNS", "100", "CALLON_USER_TURNS_PER_MINUTE", "0")
	thread := w.team("Flood")
	w.stop()
	n := master.CatchUpMax + 3
	for i := range n {
		w.say(thread, fmt.Sprintf("message %d", i))
	}
	w.start()
	w.dc.WaitFor(t, func() bool {
		notices, answers := 0, 0
		for _, m := range w.botMessages(thread) {
			switch {
			case strings.Contains(m.Content, "missed 23 messages"):
				notices++
			case m.Content == "ok":
				answers++
			}
		}
		return notices == 1 && answers == master.CatchUpMax
	}, "20 answers and a notice")
	w.restart()
	w.dc.WaitFor(t, func() bool { return w.dc.GatewayStats().Identifies >= 3 }, "the third start")
	msg := w.say(thread, "after")
	w.waitReply(thread, msg)
	if got := len(w.ai.Requests()); got != master.CatchUpMax+1 {
		t.Errorf("got %d master calls, want %d: refused messages are never answered", got, master.CatchUpMax+1)
	}
}

// A master that keeps delegating stops at the ceiling on model calls per
// message, with an apology, however its decisions go.
func TestMasterCallCeiling(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Always(delegate(task{Role: "researcher", Instruction: "again"}))),
		llmtest.Match("You are the researcher", llmtest.Always(report("more")))),
		"CALLON_MAX_MASTER_CALLS", "4")
	thread := w.team("Ceiling")
	msg := w.say(thread, "go")
	if got := w.waitReply(thread, msg); !strings.Contains(got, "took more steps than I allow") {
		t.Errorf("reply = %q, want the ceiling's apology", got)
	}
	var calls int
	for _, r := range w.ai.Requests() {
		if strings.Contains(r.Request.System(), masterPrompt) {
			calls++
		}
	}
	if calls != 4 {
		t.Errorf("got %d master calls, want 4 (the ceiling)", calls)
	}
}

// A model error that retrying cannot fix ends the turn at once, saying
// what an operator must fix.
func TestNonRetryableModelErrorAnswersAtOnce(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Always(llmtest.Status(404, "The model `gpt-4o` does not exist")))))
	thread := w.team("Wrong model")
	msg := w.say(thread, "hi")
	got := w.waitReply(thread, msg)
	if !strings.Contains(got, "the model `gpt-4o` was not found on the LLM server") {
		t.Errorf("reply = %q, want it to name the missing model", got)
	}
	// It names the settings that choose models, not only the server's URL.
	for _, v := range []string{"CALLON_MASTER_MODEL", "CALLON_WORKER_MODEL", "OPENAI_BASE_URL"} {
		if !strings.Contains(got, v) {
			t.Errorf("reply = %q, want it to name %s", got, v)
		}
	}
	if n := len(w.ai.Requests()); n != 1 {
		t.Errorf("got %d model calls, want 1", n)
	}
}

// A step that fails the same way every time is retried a bounded number
// of times, then the turn ends with an apology; the next message is
// answered.
func TestRepeatedStepFailureEndsTheTurn(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(
		delegate(task{Role: "researcher", Instruction: "look"}),
		delegate(task{Role: "researcher", Instruction: "look"}),
		reply("fine now")))),
		"CALLON_MASTER_RETRIES", "1")
	// Every new task fails to be written: a deterministic store failure.
	storetest.Exec(t, w.dbURL, `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused for the test'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON tasks FOR EACH ROW EXECUTE FUNCTION refuse();`)
	thread := w.team("Failing")
	msg := w.say(thread, "go")
	if got := w.waitReply(thread, msg); !strings.Contains(got, "something went wrong on my side") {
		t.Errorf("reply = %q, want an apology", got)
	}
	if n := len(w.ai.Requests()); n != 2 {
		t.Errorf("got %d model calls, want 2 (the decision and its one retry)", n)
	}
	next := w.say(thread, "and now?")
	if got := w.waitReply(thread, next); got != "fine now" {
		t.Errorf("next reply = %q", got)
	}
}

// At start, callon warns when the LLM server does not list the models it
// is configured with.
func TestStartWarnsOfMissingModels(t *testing.T) {
	t.Parallel()
	w := newWorld(t, discordtest.New(t), nil)
	w.ai = llmtest.New(t, llmtest.Always(reply("hi")), llmtest.WithModels("llama3.1", "gpt-4o-mini"))
	w.env["OPENAI_BASE_URL"], w.env["OPENAI_API_KEY"] = w.ai.URL(), w.ai.APIKey()
	w.start()
	w.dc.WaitFor(t, func() bool {
		return w.logged("WARN", "does not list", "model gpt-4o (CALLON_MASTER_MODEL)")
	}, "a warning naming the missing master model")
	w.dc.WaitFor(t, func() bool { return w.logged("start-up checks done", "problems=1") }, "the start-up checks' summary")
	if w.logged("CALLON_WORKER_MODEL", "does not list") {
		t.Error("warned about the worker model, which the server lists")
	}
}

// A message that cannot be recorded while the database refuses is
// retried until it can be, then answered.
func TestRoutingRetriesUntilTheDatabaseTakesTheMessage(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(reply("got it")))))
	thread := w.team("Blip")
	storetest.Exec(t, w.dbURL, `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the database is away'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON turns FOR EACH ROW EXECUTE FUNCTION refuse();`)
	msg := w.say(thread, "are you there?")
	w.dc.WaitFor(t, func() bool { return w.logged("route message", msg.ID) }, "a failed attempt to record the message")
	storetest.Exec(t, w.dbURL, `DROP TRIGGER refuse ON turns`)
	if got := w.waitReply(thread, msg); got != "got it" {
		t.Errorf("reply = %q", got)
	}
}

// While the database refuses messages, the bot keeps at most 32 of them
// in memory to retry (each on a goroutine of its own); the others it
// leaves to Discord, and once the database takes a message again it
// catches their thread up from there: every message is recorded, and the
// bot's memory does not grow with the outage. (It started one retrying
// goroutine per message for as long as the outage lasted.)
func TestOutageKeepsBoundedMessagesAndCatchesUp(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Always(reply("ok")))))
	thread := w.team("Outage")
	storetest.Exec(t, w.dbURL, `
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'the database is away'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON turns FOR EACH ROW EXECUTE FUNCTION refuse();`)
	var ids []string
	for i := range 36 {
		ids = append(ids, w.say(thread, fmt.Sprint("message ", i)).ID)
	}
	w.dc.WaitFor(t, func() bool {
		w.logs.mu.Lock()
		defer w.logs.mu.Unlock()
		n := 0
		for _, l := range w.logs.lines {
			if strings.Contains(l, "message not kept for retry") {
				n++
			}
		}
		return n == 4
	}, "4 messages beyond the 32 kept")
	storetest.Exec(t, w.dbURL, `DROP TRIGGER refuse ON turns`)
	w.dc.WaitFor(t, func() bool {
		return w.count(`SELECT count(*)::int FROM turns WHERE message_id = ANY ($1)`, ids) == len(ids)
	}, "every message recorded")
	w.dc.WaitFor(t, func() bool { return w.logged("caught up on the messages not kept") }, "the catch-up")
}
