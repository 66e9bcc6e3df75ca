package main

import (
	"strings"
	"testing"

	"github.com/callonbot/callon/llm/llmtest"
	"github.com/callonbot/callon/store/storetest"
)

// The three features in callon chat: a reviewed reply whose members'
// parts are prefixed with their names, a note the master keeps that
// /memory shows.
func TestChatPresence(t *testing.T) {
	t.Parallel()
	ai := llmtest.New(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(
			delegate(task{Role: "researcher", Instruction: "find the date"}),
			exchangeReply("The date is set.", [2]string{"researcher", "I found March 3."}),
			llmtest.Call("remember", map[string]string{"note": "Launch on March 3"}),
			reply("Noted."))),
		llmtest.Match(reviewerPrompt, llmtest.Seq(verdict("pass"))),
		llmtest.Match("You are the researcher", llmtest.Seq(report("March 3")))))
	env := map[string]string{"DATABASE_URL": storetest.URL(t), "OPENAI_BASE_URL": ai.URL(), "OPENAI_API_KEY": ai.APIKey(),
		"CALLON_SWEEP_INTERVAL": "1s", "LOG_LEVEL": "error"}
	var out, errOut syncBuffer
	in := strings.NewReader("when is the launch?\nremember that\n/memory\n/team\n/dissolve\n")
	err := run(t.Context(), []string{"chat", "--goal", "Launch", "--personas", "on", "--review", "on"},
		func(k string) string { return env[k] }, in, &out, &errOut)
	if err != nil {
		t.Fatalf("callon chat: %v\nstderr:\n%s", err, errOut.String())
	}
	got := out.String()
	for _, want := range []string{
		"team › The date is set.",
		"Researcher › I found March 3.",
		"team › Noted.",
		"Launch on March 3",                      // /memory
		"Review: on (merged replies) · 1 passed", // /team
		"**Researcher**",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the chat lacks %q; it printed:\n%s", want, got)
		}
	}
	if strings.Index(got, "The date is set.") > strings.Index(got, "I found March 3.") {
		t.Errorf("the member's part came before the coordinator's:\n%s", got)
	}
	if err := run(t.Context(), []string{"chat", "--goal", "x", "--review", "twice"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut); err == nil ||
		!strings.Contains(err.Error(), "--review takes on, off or always") {
		t.Errorf("--review twice: %v", err)
	}
}
