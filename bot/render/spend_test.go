package render

import (
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// The settled status message and /team show what the team used, and
// what it cost when the models have prices.
func TestSpendIsShown(t *testing.T) {
	t.Parallel()
	prices := master.Prices{"gpt-4o": {In: 2.5, Out: 10}}
	spent := []master.Usage{{PromptTokens: 12000, CompletionTokens: 3000, Model: "gpt-4o"}}
	start := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	ts := master.TurnStatus{Turn: master.Turn{State: master.TurnDone, UpdatedAt: start.Add(3 * time.Second)}, StartedAt: start,
		Tasks: []master.Task{{Role: "writer", State: master.TaskDone}}, Spent: spent}
	if got, want := Settled(ts, prices), "✅ Done in 3 s · 1 task by writer · team total 15,000 tokens ≈ $0.0600"; got != want {
		t.Errorf("SettledStatus = %q, want %q", got, want)
	}
	if got := Settled(ts, nil); !strings.HasSuffix(got, "team total 15,000 tokens") {
		t.Errorf("SettledStatus without prices = %q", got)
	}
	v := master.TeamView{Session: master.Session{ID: 3, Usage: master.SumUsage(spent), CreatedAt: start}, Now: start, Budget: 100_000, Cost: prices.Cost(spent)}
	if got := Team(v).Footer; !strings.HasPrefix(got, "Tokens used: 15,000 (12,000 prompt, 3,000 completion) of a budget of 100,000 · cost ≈ $0.0600 · session #3") {
		t.Errorf("/team footer = %q", got)
	}
}
