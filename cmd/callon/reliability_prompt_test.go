package main

import (
	"strings"
	"testing"

	"github.com/callonbot/callon/llm/llmtest"
)

// The pre-send check, end to end: a writer that was blocked in its last
// task is flagged in the master's prompt for the next message, and the
// role it did well with is not.
func TestMasterIsToldOfAFailingRole(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply {
				return delegate(task{Role: "researcher", Instruction: "facts"}, task{Role: "writer", Instruction: "draft"})
			},
			func(llmtest.Request) llmtest.Reply { return reply("done what we could") },
			func(llmtest.Request) llmtest.Reply { return reply("noted") })),
		llmtest.Match("You are the researcher", llmtest.Always(report("facts"))),
		llmtest.Match("You are the writer", llmtest.Always(
			llmtest.Call("report", map[string]any{"status": "blocked", "result": "no access"})))))
	thread := w.team("Ship the launch post")
	w.waitReply(thread, w.say(thread, "write the post"))
	w.waitReply(thread, w.say(thread, "and now?"))
	var last llmtest.Request
	for _, r := range w.ai.Requests() {
		if strings.Contains(r.Request.System(), masterPrompt) {
			last = r.Request
		}
	}
	sys := last.System()
	if !strings.Contains(sys, "- writer: 1 of its last 1 ended blocked") {
		t.Errorf("the master's prompt does not flag the blocked writer:\n%s", sys)
	}
	if strings.Count(sys, "- researcher: ") != 1 { // its line in the team, and no other
		t.Errorf("the master's prompt flags the researcher, who did well:\n%s", sys)
	}
}
