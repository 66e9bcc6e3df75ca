package master

import (
	"strings"
	"testing"
	"time"
)

func TestAccessAllows(t *testing.T) {
	t.Parallel()
	a := Access{
		{Action: AccessStart, Kind: AccessRole, ID: "leads"},
		{Action: AccessStart, Kind: AccessUser, ID: "ann"},
		{Action: AccessStart, Kind: AccessChannel, ID: "dev"},
		{Action: AccessTalk, Kind: AccessChannel, ID: "dev"},
	}
	tests := []struct {
		name    string
		action  AccessAction
		user    string
		roles   []string
		channel string
		want    bool
	}{
		{"a listed role, a listed channel", AccessStart, "bob", []string{"x", "leads"}, "dev", true},
		{"a listed user", AccessStart, "ann", nil, "dev", true},
		{"neither user nor role", AccessStart, "bob", []string{"x"}, "dev", false},
		{"the right person in the wrong channel", AccessStart, "ann", nil, "general", false},
		{"talk: anyone, in a listed channel", AccessTalk, "bob", nil, "dev", true},
		{"talk: elsewhere", AccessTalk, "bob", nil, "general", false},
		{"no rules: everyone everywhere", AccessTalk, "bob", nil, "dev", true},
	}
	for _, tt := range tests {
		acc := a
		if strings.HasPrefix(tt.name, "no rules") {
			acc = nil
		}
		if got := acc.Allows(tt.action, tt.user, tt.roles, tt.channel); got != tt.want {
			t.Errorf("%s: Allows = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCostAndTokens(t *testing.T) {
	t.Parallel()
	p := Prices{"big": {In: 2.5, Out: 10}, "small": {In: 0.15, Out: 0.6}}
	usage := []Usage{{PromptTokens: 1_000_000, CompletionTokens: 100_000, Model: "big"}, {PromptTokens: 2000, Model: "small"}, {PromptTokens: 5, Model: "odd"}}
	if got := p.Cost(usage).String(); got != "≈ $3.50 (not counting odd: no price)" {
		t.Errorf("Cost = %q", got)
	}
	if got := p.Cost(usage[1:2]).String(); got != "≈ $0.0003" {
		t.Errorf("Cost of a little = %q", got)
	}
	if got := p.Cost(usage[2:]).String(); got != "" {
		t.Errorf("Cost without any price = %q, want nothing", got)
	}
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 2_000_000: "2,000,000", -1234: "-1,234"} {
		if got := Tokens(n); got != want {
			t.Errorf("Tokens(%d) = %q, want %q", n, got, want)
		}
	}
	if got := BudgetText(&BudgetError{Guild: true, Limit: 50_000}); !strings.Contains(got, "daily budget of 50,000 tokens") || !strings.Contains(got, "/budget server") {
		t.Errorf("BudgetText = %q", got)
	}
}

// The settled status message and /team show what the team used, and
// what it cost when the models have prices.
func TestSpendIsShown(t *testing.T) {
	t.Parallel()
	prices := Prices{"gpt-4o": {In: 2.5, Out: 10}}
	spent := []Usage{{PromptTokens: 12000, CompletionTokens: 3000, Model: "gpt-4o"}}
	start := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)
	ts := TurnStatus{Turn: Turn{State: TurnDone, UpdatedAt: start.Add(3 * time.Second)}, StartedAt: start,
		Tasks: []Task{{Role: "writer", State: TaskDone}}, Spent: spent}
	if got, want := SettledStatus(ts, prices), "✅ Done in 3 s · 1 task by writer · team total 15,000 tokens ≈ $0.0600"; got != want {
		t.Errorf("SettledStatus = %q, want %q", got, want)
	}
	if got := SettledStatus(ts, nil); !strings.HasSuffix(got, "team total 15,000 tokens") {
		t.Errorf("SettledStatus without prices = %q", got)
	}
	v := TeamView{Session: Session{ID: 3, Usage: SumUsage(spent), CreatedAt: start}, Now: start, Budget: 100_000, Cost: prices.Cost(spent)}
	if got := RenderTeam(v, "m").Footer; !strings.HasPrefix(got, "Tokens used: 15,000 (12,000 prompt, 3,000 completion) of a budget of 100,000 · cost ≈ $0.0600 · session #3") {
		t.Errorf("/team footer = %q", got)
	}
}
