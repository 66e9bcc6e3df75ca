package master

import (
	"strings"
	"testing"
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
		t.Run(tt.name, func(t *testing.T) {
			acc := a
			if strings.HasPrefix(tt.name, "no rules") {
				acc = nil
			}
			if got := acc.Allows(tt.action, tt.user, tt.roles, tt.channel); got != tt.want {
				t.Errorf("%s: Allows = %v, want %v", tt.name, got, tt.want)
			}
		})
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
