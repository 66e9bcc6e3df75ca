package main

import (
	"testing"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

// The master runs on the default provider and the workers on a named
// one: each server sees only its own calls, with the model name as it
// knows it and its own key.
func TestTwoProviders(t *testing.T) {
	t.Parallel()
	local := llmtest.New(t, llmtest.Always(report("from the local model")))
	w := newWorld(t, discordtest.New(t), llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(
		delegate(task{Role: "researcher", Instruction: "look"}),
		reply("merged")))),
		"CALLON_PROVIDERS", "local="+local.URL(),
		"CALLON_PROVIDER_LOCAL_API_KEY", local.APIKey(),
		"CALLON_WORKER_MODEL", "local/llama3.1")
	w.start()
	thread := w.team("Two providers")
	msg := w.say(thread, "go")
	if got := w.waitReply(thread, msg); got != "merged" {
		t.Fatalf("reply = %q", got)
	}
	for _, r := range w.ai.Requests() {
		if r.Request.Model != "gpt-4o" {
			t.Errorf("the default provider got a call for %q, want only the master's gpt-4o", r.Request.Model)
		}
	}
	calls := local.Requests()
	if len(calls) != 1 || calls[0].Request.Model != "llama3.1" {
		t.Errorf("the local provider got %d calls (first for %q), want the worker's one call for llama3.1", len(calls), firstModel(calls))
	}
}

func firstModel(recs []llmtest.Record) string {
	if len(recs) == 0 {
		return ""
	}
	return recs[0].Request.Model
}
