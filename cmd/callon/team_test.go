package main

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
	"github.com/callonbot/callon/master"
)

// isMaster routes the coordinator's requests; workers name their role.
const masterPrompt = "You are the coordinator of a team"

func reply(text string) llmtest.Reply {
	return llmtest.Call("reply", map[string]any{"text": text})
}

func TestDirectAnswer(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(reply("Hello! How can the team help?")))))
	thread := w.team("Plan the beta launch")
	msg := w.say(thread, "hi team")
	if got := w.waitReply(thread, msg); got != "Hello! How can the team help?" {
		t.Errorf("reply = %q, want the master's text", got)
	}
	reqs := w.ai.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d model calls, want 1", len(reqs))
	}
	if sys := reqs[0].Request.System(); !strings.Contains(sys, "Plan the beta launch") || !strings.Contains(sys, "- researcher:") {
		t.Errorf("master system prompt lacks the goal or the roster:\n%s", sys)
	}
	if reqs[0].Request.ToolChoice != "required" {
		t.Errorf("tool_choice = %q, want required", reqs[0].Request.ToolChoice)
	}
}

func report(result string) llmtest.Reply {
	return llmtest.Call("report", map[string]any{"status": "done", "result": result})
}

type task struct {
	Role        string `json:"role"`
	Instruction string `json:"instruction"`
	DependsOn   []int  `json:"depends_on,omitempty"`
}

func delegate(tasks ...task) llmtest.Reply {
	return llmtest.Call("delegate", map[string]any{"tasks": tasks})
}

// workerRequests are the recorded requests of one role's workers.
func workerRequests(recs []llmtest.Record, role string) []llmtest.Record {
	var out []llmtest.Record
	for _, r := range recs {
		if strings.HasPrefix(r.Request.System(), "You are the "+role+" of a team") {
			out = append(out, r)
		}
	}
	return out
}

// toolResults joins every tool message the master was shown.
func toolResults(req llmtest.Request) string {
	var b strings.Builder
	for _, m := range req.Messages {
		if m.Role == "tool" {
			b.WriteString(m.Content + "\n")
		}
	}
	return b.String()
}

// barrier returns a function that blocks until n callers have arrived,
// or 10 s have passed (so a test that fails to run them together fails
// on its assertions rather than hanging).
func barrier(n int) func() {
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	return func() {
		mu.Lock()
		arrived++
		if arrived == n {
			close(all)
		}
		mu.Unlock()
		select {
		case <-all:
		case <-time.After(10 * time.Second):
		}
	}
}

func TestDelegateOneWorker(t *testing.T) {
	t.Parallel()
	var mastered []llmtest.Request
	var mu sync.Mutex
	master := llmtest.SeqFunc(
		func(r llmtest.Request) llmtest.Reply {
			return delegate(task{Role: "researcher", Instruction: "Find three competitors"})
		},
		func(r llmtest.Request) llmtest.Reply {
			mu.Lock()
			mastered = append(mastered, r)
			mu.Unlock()
			return reply("The team found three competitors: A, B and C.")
		},
	)
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, master),
		llmtest.Match("You are the researcher", llmtest.Seq(report("RESULT-XYZ: A, B, C")))))
	thread := w.team("Plan the beta launch")
	msg := w.say(thread, "who are our competitors? (thread-only detail)")
	if got := w.waitReply(thread, msg); got != "The team found three competitors: A, B and C." {
		t.Errorf("reply = %q, want the merged answer", got)
	}
	recs := w.ai.Requests()
	workers := workerRequests(recs, "researcher")
	if len(workers) != 1 {
		t.Fatalf("researcher called %d times, want once", len(workers))
	}
	wr := workers[0].Request
	if want := "You are the researcher of a team working on: Plan the beta launch"; !strings.HasPrefix(wr.System(), want) {
		t.Errorf("worker system prompt starts %q, want %q", clip(wr.System()), want)
	}
	if strings.Contains(wr.System(), "You plan.") {
		t.Error("the researcher's prompt contains another role's prompt")
	}
	if !strings.Contains(wr.LastUser(), "Find three competitors") {
		t.Errorf("worker instruction missing from %q", wr.LastUser())
	}
	for _, m := range wr.Messages {
		if strings.Contains(m.Content, "thread-only detail") {
			t.Errorf("a worker saw the raw thread: %q", m.Content)
		}
	}
	if len(mastered) != 1 || !strings.Contains(toolResults(mastered[0]), "RESULT-XYZ") {
		t.Fatalf("the master's second call did not carry the worker's result")
	}
	for _, m := range w.botMessages(thread) {
		if strings.Contains(m.Content, "RESULT-XYZ") {
			t.Errorf("worker output reached the thread: %q", m.Content)
		}
	}
}

func TestThreeWorkersInParallel(t *testing.T) {
	t.Parallel()
	together := barrier(3)
	worker := func(r llmtest.Request) llmtest.Reply {
		together()
		return report("ok from " + strings.Fields(r.System())[3])
	}
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(
			delegate(task{Role: "researcher", Instruction: "a"}, task{Role: "planner", Instruction: "b"}, task{Role: "writer", Instruction: "c"}),
			reply("All three are done."))),
		llmtest.Match("", worker)))
	thread := w.team("Parallel work")
	msg := w.say(thread, "go")
	w.waitReply(thread, msg)
	var workers []llmtest.Record
	for _, role := range []string{"researcher", "planner", "writer"} {
		workers = append(workers, workerRequests(w.ai.Requests(), role)...)
	}
	if len(workers) != 3 {
		t.Fatalf("got %d worker calls, want 3", len(workers))
	}
	if !llmtest.Overlapping(workers...) {
		for _, r := range workers {
			t.Logf("%s arrived %s answered %s", clip(r.Request.System()), r.Arrived.Format(time.StampMilli), r.Answered.Format(time.StampMilli))
		}
		t.Error("the three workers did not run at the same time")
	}
}

func TestDependsOnChain(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(
			delegate(task{Role: "researcher", Instruction: "collect facts"},
				task{Role: "writer", Instruction: "write it up", DependsOn: []int{0}}),
			reply("Here is the write-up."))),
		llmtest.Match("You are the researcher", llmtest.Seq(report("FACT-42"))),
		llmtest.Match("You are the writer", llmtest.Seq(report("a write-up")))))
	thread := w.team("Chained work")
	msg := w.say(thread, "go")
	w.waitReply(thread, msg)
	recs := w.ai.Requests()
	research, write := workerRequests(recs, "researcher"), workerRequests(recs, "writer")
	if len(research) != 1 || len(write) != 1 {
		t.Fatalf("got %d researcher and %d writer calls, want 1 each", len(research), len(write))
	}
	if !strings.Contains(write[0].Request.LastUser(), "FACT-42") {
		t.Errorf("the writer did not receive the researcher's result:\n%s", write[0].Request.LastUser())
	}
	if write[0].Arrived.Before(research[0].Answered) {
		t.Error("the writer started before the researcher had answered")
	}
}

func TestTwoRoundsThenMustReply(t *testing.T) {
	t.Parallel()
	var last llmtest.Request
	var mu sync.Mutex
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply {
				return delegate(task{Role: "researcher", Instruction: "round one"})
			},
			func(llmtest.Request) llmtest.Reply { return delegate(task{Role: "reviewer", Instruction: "round two"}) },
			func(r llmtest.Request) llmtest.Reply {
				mu.Lock()
				last = r
				mu.Unlock()
				return reply("Two rounds done.")
			})),
		llmtest.Match("You are the researcher", llmtest.Seq(report("R1"))),
		llmtest.Match("You are the reviewer", llmtest.Seq(report("R2")))),
		"CALLON_MAX_ROUNDS", "2")
	thread := w.team("Rounds")
	msg := w.say(thread, "go")
	if got := w.waitReply(thread, msg); got != "Two rounds done." {
		t.Errorf("reply = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if names := last.ToolNames(); len(names) != 1 || names[0] != "reply" {
		t.Errorf("after the last round the master was offered %v, want only reply", names)
	}
	if res := toolResults(last); !strings.Contains(res, "R1") || !strings.Contains(res, "R2") {
		t.Errorf("the master's last call lacks a round's results:\n%s", res)
	}
}

func TestWorkerOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		worker llmtest.Script
		env    []string
		want   []string // in the master's view of the round
	}{
		{"plain text counts as done", llmtest.Seq(llmtest.Text("PLAIN-ANSWER")), nil, []string{"researcher: done", "PLAIN-ANSWER"}},
		{"malformed arguments fail after one retry", llmtest.Seq(
			llmtest.RawCall("report", `{"status": "done", "result": `),
			llmtest.RawCall("report", `{"status": "finished", "result": "x"}`)), nil,
			[]string{"researcher: failed", "status"}},
		{"malformed then fixed", llmtest.Seq(
			llmtest.RawCall("report", `{"status":`),
			report("FIXED")), nil, []string{"researcher: done", "FIXED"}},
		{"timeout", llmtest.Seq(llmtest.Hang()), []string{"CALLON_TASK_TIMEOUT", "1s"}, []string{"researcher: timeout", "timed out"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var seen llmtest.Request
			var mu sync.Mutex
			w := setup(t, llmtest.Switch(
				llmtest.Match(masterPrompt, llmtest.SeqFunc(
					func(llmtest.Request) llmtest.Reply { return delegate(task{Role: "researcher", Instruction: "look"}) },
					func(r llmtest.Request) llmtest.Reply {
						mu.Lock()
						seen = r
						mu.Unlock()
						return reply("Merged.")
					})),
				llmtest.Match("You are the researcher", tt.worker)), tt.env...)
			thread := w.team("Outcomes")
			msg := w.say(thread, "go")
			w.waitReply(thread, msg)
			mu.Lock()
			defer mu.Unlock()
			res := toolResults(seen)
			for _, want := range tt.want {
				if !strings.Contains(res, want) {
					t.Errorf("the master was told:\n%s\nwant it to contain %q", res, want)
				}
			}
		})
	}
}

func clip(s string) string { return master.Truncate(s, 80) }

func TestLongReplyIsSplit(t *testing.T) {
	t.Parallel()
	para := strings.TrimSpace(strings.Repeat("lorem ipsum ", 125)) // 1,499 characters
	long := para + "\n\n" + para + "\n\n" + para
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(reply(long)))))
	thread := w.team("Long answers")
	msg := w.say(thread, "tell me everything")
	w.waitReply(thread, msg)
	w.dc.WaitFor(t, func() bool { return len(w.reply(thread, msg)) == 3 }, "three parts")
	parts := w.reply(thread, msg)
	for i, p := range parts {
		if n := len([]rune(p.Content)); n > 2000 {
			t.Errorf("part %d has %d characters, want at most 2000", i, n)
		}
		if p.Nonce == "" || !p.EnforceNonce {
			t.Errorf("part %d sent without nonce/enforce_nonce (%q, %v)", i, p.Nonce, p.EnforceNonce)
		}
		if (p.Reference != nil) != (i == 0) {
			t.Errorf("part %d reference = %v, want only the first part to reply", i, p.Reference)
		}
		if p.Content != para {
			t.Errorf("part %d is not split on the paragraph boundary: %q…", i, clip(p.Content))
		}
	}
}

func TestRepliesPingNobody(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(reply("@everyone @here <@&123> ping!")))))
	thread := w.team("Mentions")
	msg := w.say(thread, "@everyone look at this")
	w.waitReply(thread, msg)
	for _, m := range w.botMessages(thread) {
		am := m.AllowedMentions
		if am == nil {
			t.Errorf("message %q has no allowed_mentions", clip(m.Content))
			continue
		}
		if len(am.Parse) != 0 || len(am.Roles) != 0 || len(am.Users) != 0 {
			t.Errorf("message %q allows mentions %+v, want none", clip(m.Content), am)
		}
	}
}

func TestRedeliveredMessageMakesOneTurn(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.SeqFunc(
		func(r llmtest.Request) llmtest.Reply { return reply("first answer") },
		func(r llmtest.Request) llmtest.Reply { return reply("second answer") }))))
	thread := w.team("Idempotence")
	first := w.say(thread, "one")
	w.dc.Redeliver(first)
	w.waitReply(thread, first)
	second := w.say(thread, "two")
	if got := w.waitReply(thread, second); got != "second answer" {
		t.Errorf("reply to the second message = %q, want %q", got, "second answer")
	}
	if n := len(w.reply(thread, first)); n != 1 {
		t.Errorf("the first message got %d replies, want 1", n)
	}
	if n := len(w.ai.Requests()); n != 2 {
		t.Errorf("the master ran %d times, want 2 (one per distinct message)", n)
	}
}

func TestMessagesInOrderAndBotsIgnored(t *testing.T) {
	t.Parallel()
	answer := func(r llmtest.Request) llmtest.Reply {
		return reply("answer to " + strings.SplitN(r.LastUser(), ": ", 2)[1])
	}
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, answer)))
	thread := w.team("Ordering")
	other := w.dc.AddBot("otherbot")
	w.dc.UserMessage(thread, other, "I am a bot, ignore me")
	a := w.say(thread, "alpha")
	b := w.say(thread, "beta")
	if got := w.waitReply(thread, b); got != "answer to beta" {
		t.Errorf("reply to beta = %q", got)
	}
	if got := w.waitReply(thread, a); got != "answer to alpha" {
		t.Errorf("reply to alpha = %q", got)
	}
	recs := w.ai.Requests()
	if len(recs) != 2 {
		t.Fatalf("the master ran %d times, want 2 (the other bot's message starts nothing)", len(recs))
	}
	if !strings.HasSuffix(recs[0].Request.LastUser(), "alpha") || !recs[1].Arrived.After(recs[0].Answered) {
		t.Error("the second message was not handled after the first")
	}
	if !strings.Contains(recs[1].Request.Messages[1].Content, "alpha") {
		t.Errorf("the second turn does not see the first exchange in its history")
	}
}

func TestTwoSessionsAtOnce(t *testing.T) {
	t.Parallel()
	together := barrier(2)
	answer := func(r llmtest.Request) llmtest.Reply {
		together()
		goal := "unknown"
		for _, g := range []string{"GOAL-ONE", "GOAL-TWO"} {
			if strings.Contains(r.System(), g) {
				goal = g
			}
		}
		return reply("about " + goal)
	}
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, answer)))
	one, two := w.team("GOAL-ONE"), w.team("GOAL-TWO")
	m1, m2 := w.say(one, "hi"), w.say(two, "hi")
	if got := w.waitReply(one, m1); got != "about GOAL-ONE" {
		t.Errorf("thread one got %q", got)
	}
	if got := w.waitReply(two, m2); got != "about GOAL-TWO" {
		t.Errorf("thread two got %q", got)
	}
	if !llmtest.Overlapping(w.ai.Requests()...) {
		t.Error("the two sessions' masters did not run at the same time")
	}
}

func TestRestartAfterDelegationRepliesOnce(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply {
				return delegate(task{Role: "researcher", Instruction: "slow"}, task{Role: "writer", Instruction: "fast"})
			},
			func(r llmtest.Request) llmtest.Reply {
				return reply("Merged: " + strings.Join(found(toolResults(r), "RES-"), ", "))
			},
			func(llmtest.Request) llmtest.Reply { return reply("bye") })),
		// The researcher's first call hangs until the process stops.
		llmtest.Match("You are the researcher", llmtest.Seq(llmtest.Hang(), report("RES-A"))),
		llmtest.Match("You are the writer", llmtest.Seq(report("RES-B")))))
	thread := w.team("Survive restarts")
	msg := w.say(thread, "go")
	w.dc.WaitFor(t, func() bool {
		return len(workerRequests(w.ai.Requests(), "researcher")) == 1 && hasSignal(w.signals(thread), "TASK_COMPLETE", `"state":"done"`)
	}, "the researcher to start and the writer to finish")
	w.restart()
	if got := w.waitReply(thread, msg); got != "Merged: RES-A, RES-B" {
		t.Errorf("reply = %q, want every result", got)
	}
	// A later message is answered after anything still queued for the
	// first one, so a duplicate reply would show by then.
	later := w.say(thread, "thanks")
	w.waitReply(thread, later)
	if n := len(w.reply(thread, msg)); n != 1 {
		t.Errorf("got %d replies to the message, want exactly 1", n)
	}
	if n := len(workerRequests(w.ai.Requests(), "writer")); n != 1 {
		t.Errorf("the finished writer task ran %d times, want once", n)
	}
}

// found lists the words of s that start with prefix, in order.
func found(s, prefix string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\n' || r == ',' }) {
		if strings.HasPrefix(f, prefix) {
			out = append(out, f)
		}
	}
	return out
}

func TestAskUserThenContinue(t *testing.T) {
	t.Parallel()
	var second llmtest.Request
	var mu sync.Mutex
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply { return delegate(task{Role: "researcher", Instruction: "options"}) },
			func(llmtest.Request) llmtest.Reply {
				return llmtest.Call("ask_user", map[string]any{"question": "Which market, EU or US?"})
			},
			func(r llmtest.Request) llmtest.Reply {
				mu.Lock()
				second = r
				mu.Unlock()
				return reply("Going with the EU.")
			})),
		llmtest.Match("You are the researcher", llmtest.Seq(report("OPTIONS-FOUND")))))
	thread := w.team("Pick a market")
	msg := w.say(thread, "where should we launch?")
	if got := w.waitReply(thread, msg); got != "Which market, EU or US?" {
		t.Fatalf("first answer = %q, want the question", got)
	}
	answer := w.say(thread, "EU please")
	if got := w.waitReply(thread, answer); got != "Going with the EU." {
		t.Errorf("reply to the answer = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	var history strings.Builder
	for _, m := range second.Messages {
		history.WriteString(m.Content + "\n")
	}
	for _, want := range []string{"Which market, EU or US?", "OPTIONS-FOUND", "EU please"} {
		if !strings.Contains(history.String(), want) {
			t.Errorf("the master's context after the answer lacks %q", want)
		}
	}
}

func TestReplanWithinATurn(t *testing.T) {
	t.Parallel()
	var enum []string
	var mu sync.Mutex
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply {
				return llmtest.Call("replan", map[string]any{"reason": "we need a lawyer",
					"roles": []map[string]string{{"name": "researcher", "description": "finds facts"}, {"name": "lawyer", "description": "reads contracts"}}})
			},
			func(r llmtest.Request) llmtest.Reply {
				mu.Lock()
				enum = r.ToolEnum("delegate", "tasks", "role")
				mu.Unlock()
				return delegate(task{Role: "lawyer", Instruction: "check the contract"})
			},
			func(llmtest.Request) llmtest.Reply { return reply("The lawyer says it is fine.") })),
		llmtest.Match("You are the lawyer", llmtest.Seq(report("fine")))))
	thread := w.team("Contract review")
	msg := w.say(thread, "review this contract")
	if got := w.waitReply(thread, msg); got != "The lawyer says it is fine." {
		t.Errorf("reply = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(enum, ",") != "researcher,lawyer" {
		t.Errorf("after replan the delegate roles are %v, want researcher, lawyer", enum)
	}
	if got := workerRequests(w.ai.Requests(), "lawyer"); len(got) != 1 || !strings.Contains(got[0].Request.System(), "reads contracts") {
		t.Errorf("the new role's worker did not run with its description as its prompt")
	}
}

func TestDiscordErrorsDelayTheReplyButLoseNothing(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(reply("made it")))))
	thread := w.team("Flaky Discord")
	if got := w.dc.Intents(); got&discordgo.IntentMessageContent == 0 || got&discordgo.IntentsGuildMessages == 0 || got&discordgo.IntentsGuilds == 0 {
		t.Errorf("identified with intents %b, want guilds, guild messages and message content", got)
	}
	w.dc.Fail(discordtest.RouteCreateMessage, 2, 500)
	w.dc.RateLimit(discordtest.RouteCreateMessage, 1, 100*time.Millisecond)
	msg := w.say(thread, "hello?")
	if got := w.waitReply(thread, msg); got != "made it" {
		t.Errorf("reply = %q", got)
	}
	if n := len(w.reply(thread, msg)); n != 1 {
		t.Errorf("got %d replies, want exactly 1 after the retries", n)
	}
}

func TestMasterModelOutageIsRetriedLater(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(
		llmtest.ServerError(), llmtest.ServerError(), reply("Back online.")))),
		"CALLON_LLM_RETRIES", "0", "CALLON_MASTER_RETRY_DELAY", "100ms")
	thread := w.team("Outage")
	msg := w.say(thread, "hello?")
	if got := w.waitReply(thread, msg); got != "Back online." {
		t.Errorf("reply = %q, want the answer once the model is back", got)
	}
	if n := len(w.ai.Requests()); n != 3 {
		t.Errorf("got %d model calls, want 3 (two failures, then the answer)", n)
	}
}

func TestMasterGivesUpAfterItsRetries(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(llmtest.ServerError(), llmtest.ServerError()))),
		"CALLON_LLM_RETRIES", "0", "CALLON_MASTER_RETRIES", "1", "CALLON_MASTER_RETRY_DELAY", "100ms")
	thread := w.team("Outage")
	msg := w.say(thread, "hello?")
	if got := w.waitReply(thread, msg); !strings.Contains(got, "could not reach the team's language model") {
		t.Errorf("reply = %q, want a polite apology", got)
	}
}
