package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

// progressCall is a worker's progress call that used 300 tokens.
var progressCall = llmtest.Call("progress", map[string]any{"percent": 10, "note": "working"}).WithUsage(200, 100)

// guildTokens is what the guild's usage of the day says it spent.
func (w *world) guildTokens() int {
	w.t.Helper()
	return w.count(`SELECT coalesce(sum(prompt_tokens + completion_tokens), 0)::int FROM guild_usage`)
}

// Every model call is charged when it returns, whatever becomes of its
// task: a member who lets workers spend and then dissolves the team has
// had every call charged to the team and to the server's day, and
// /budget show says so. (Usage used to be written only with a task's
// outcome: 7 calls of 300 tokens spent, 15 tokens charged.)
func TestDissolvedTeamHasPaidForItsWorkersCalls(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	calls := []llmtest.Reply{}
	for range 7 {
		calls = append(calls, progressCall)
	}
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(delegate(task{Role: "researcher", Instruction: "dig"}).WithUsage(10, 5))),
		llmtest.Match("You are the researcher", llmtest.SeqFunc(append(scripts(calls...), gated(gate, progressCall))...)),
	))
	t.Cleanup(func() { close(gate) }) // before the model's server closes: it waits for the call in flight
	thread := w.team("Spend then dissolve")
	w.say(thread, "dig into it")
	w.dc.WaitFor(t, func() bool { return len(workerRequests(w.ai.Requests(), "researcher")) == 8 }, "the researcher's eighth call, in flight")
	if r := w.dissolve(thread, w.dc.UserID(), 0); !strings.Contains(r, "dissolved") {
		t.Fatalf("/dissolve: %q", r)
	}
	want := 15 + 7*300
	w.dc.WaitFor(t, func() bool { return w.guildTokens() >= want }, fmt.Sprintf("the guild charged %d tokens", want))
	if got := w.guildTokens(); got != want {
		t.Errorf("the guild was charged %d tokens, want %d: the master's call and the researcher's seven", got, want)
	}
	if got := w.count(`SELECT (prompt_tokens + completion_tokens)::int FROM sessions`); got != want {
		t.Errorf("the team was charged %d tokens, want %d", got, want)
	}
	// The call in flight when the team was dissolved is cancelled and
	// settled by its worker, a moment after the dissolve answered.
	w.dc.WaitFor(t, func() bool { return w.count(`SELECT count(*)::int FROM spend_holds`) == 0 }, "no hold left after the dissolved team's calls ended")
	show := w.command(w.dc.ChannelID("general"), w.dc.UserID(), discordgo.PermissionManageGuild, "budget", discordtest.Subcommand("show")).Content
	mustContain(t, "/budget show", show, "2,115")
}

// scripts makes each reply a script of one answer, for SeqFunc.
func scripts(replies ...llmtest.Reply) []llmtest.Script {
	out := make([]llmtest.Script, len(replies))
	for i, r := range replies {
		out[i] = llmtest.Always(r)
	}
	return out
}

// Workers running at once cannot overshoot a budget together: two teams
// of one guild fan out four workers each, every worker calling its model
// until the budgets stop it, and neither team's spend nor the guild's
// passes its budget by more than one call. (Each worker used to count only
// its own tokens not charged yet: with a 1,000-token team budget, four
// workers spent about four times the budget.)
func TestParallelWorkersStayWithinTheBudgets(t *testing.T) {
	t.Parallel()
	const teamBudget, guildBudget, perCall = 1000, 1800, 300
	fanOut := delegate(task{Role: "researcher", Instruction: "a"}, task{Role: "researcher", Instruction: "b"},
		task{Role: "planner", Instruction: "c"}, task{Role: "planner", Instruction: "d"}).WithUsage(10, 5)
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Always(fanOut)),
		llmtest.Match("You are the", llmtest.Always(progressCall)),
	), "CALLON_MAX_SESSION_TOKENS", fmt.Sprint(teamBudget), "CALLON_GUILD_DAILY_TOKENS", fmt.Sprint(guildBudget),
		"CALLON_CONCURRENT_TASKS", "8")
	a, b := w.team("Team A"), w.team("Team B")
	ma, mb := w.say(a, "go"), w.say(b, "go")
	for _, th := range []struct {
		thread string
		msg    discordtest.Message
	}{{a, ma}, {b, mb}} {
		mustContain(t, "the answer once the budget is spent", w.waitReply(th.thread, th.msg), "budget")
	}
	for _, th := range []string{a, b} {
		used := w.count(`SELECT (prompt_tokens + completion_tokens)::int FROM sessions WHERE thread_id = $1`, th)
		if used > teamBudget+perCall {
			t.Errorf("a team used %d tokens: more than its budget %d plus one call (%d)", used, teamBudget, perCall)
		}
	}
	if got := w.guildTokens(); got > guildBudget+perCall || got < guildBudget {
		t.Errorf("the guild used %d tokens: want its budget %d reached, overshot by one call (%d) at most", got, guildBudget, perCall)
	}
	if n := w.count(`SELECT count(*)::int FROM spend_holds`); n != 0 {
		t.Errorf("%d holds left", n)
	}
}
