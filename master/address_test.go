package master

import (
	"strings"
	"testing"
)

func TestAddressee(t *testing.T) {
	t.Parallel()
	roster := []Role{{Name: "planner"}, {Name: "market-analyst"}, {Name: "go_reviewer"}}
	tests := []struct {
		content, want string
	}{
		{"@planner draft the timeline", "planner"},
		{"  @Planner, draft the timeline", "planner"},
		{"@PLANNER", "planner"},
		{"planner: draft the timeline", "planner"},
		{"Market-Analyst: size it", "market-analyst"},
		{"@go_reviewer look at this", "go_reviewer"},
		{"planner draft the timeline", ""},  // neither @ nor a colon
		{"planner : draft", ""},             // the colon must follow the name
		{"@writer draft it", ""},            // not on the team
		{"writer: draft it", ""},            // not on the team
		{"@plannerx draft", ""},             // a longer word is another name
		{"<@123> planner: draft", ""},       // a Discord mention first
		{"hey @planner, draft", ""},         // not at the start
		{"note: @planner should draft", ""}, // the first word decides
		{"", ""},
		{"@", ""},
	}
	for _, tt := range tests {
		if got := Addressee(tt.content, roster); got != tt.want {
			t.Errorf("Addressee(%q) = %q, want %q", tt.content, got, tt.want)
		}
	}
}

func TestAddressedTurnPrompt(t *testing.T) {
	t.Parallel()
	tc := turnContext{session: Session{Goal: "g"}, roster: DefaultRoles(), maxRounds: 2,
		turn: Turn{AuthorID: "42", Content: "@planner draft the timeline", AddressedTo: "planner"}}
	msgs := masterMessages(tc)
	last := msgs[len(msgs)-1]
	if last.Role != RoleSystem || !strings.Contains(last.Content, "addressed this message to planner: delegate it to planner unless you have a reason not to") {
		t.Errorf("the last message is %s %q, want the system note on the addressed role", last.Role, last.Content)
	}
	tc.roster = tc.roster[:1] // planner left the team
	for _, m := range masterMessages(tc) {
		if strings.Contains(m.Content, "addressed this message") {
			t.Errorf("a note names a role that left the team: %q", m.Content)
		}
	}
}
