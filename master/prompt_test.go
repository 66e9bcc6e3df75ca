package master

import (
	"github.com/callonbot/callon/internal/golden"

	"fmt"
	"strings"
	"testing"
)

func renderMessages(msgs []Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "=== %s", m.Role)
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, " (answers %s)", m.ToolCallID)
		}
		b.WriteString("\n")
		if m.Content != "" {
			b.WriteString(m.Content + "\n")
		}
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "-> %s %s %s\n", c.ID, c.Name, c.Arguments)
		}
	}
	return b.String()
}

func TestMasterPromptGolden(t *testing.T) {
	t.Parallel()
	var history []Exchange
	for i := range 8 {
		history = append(history, Exchange{TurnID: int64(i + 1), AuthorID: "42",
			Message: fmt.Sprintf("question %d", i+1), Answer: fmt.Sprintf("answer %d", i+1)})
	}
	history[7].Asked = true
	history[7].Results = []Task{{ID: 1, Role: "researcher", State: TaskDone, Result: "found X"}}
	tc := turnContext{
		session: Session{Goal: "Launch the beta"},
		roster:  DefaultRoles()[:3],
		history: history,
		recent:  3,
		turn:    Turn{AuthorID: "42", Content: "Write the announcement", Round: 2},
		tasks: []Task{
			{ID: 10, Round: 1, Role: "researcher", Instruction: "List the features", State: TaskDone, Result: "A, B"},
			{ID: 11, Round: 1, Role: "planner", Instruction: "Plan it", DependsOn: []int64{10}, State: TaskFailed, Error: "model error"},
			{ID: 12, Round: 2, Role: "engineer", Instruction: "Check B", State: TaskTimeout, Error: "timed out after 5m0s"},
		},
		maxRounds: 2,
		mustReply: "You have used all 2 rounds of delegation for this message.",
	}
	golden.Check(t, "master_prompt.golden", renderMessages(masterMessages(tc)))
}

// A terminal team's master is told where it works: not Discord.
func TestMasterPromptOfATerminalTeam(t *testing.T) {
	t.Parallel()
	tc := turnContext{session: Session{Goal: "Plan", Surface: SurfaceTerminal}, roster: DefaultRoles()[:1],
		turn: Turn{AuthorID: "you", Content: "hi"}, maxRounds: 2}
	got := masterMessages(tc)[0].Content
	if strings.Contains(got, "Discord") || !strings.Contains(got, "working in a terminal chat") {
		t.Errorf("a terminal team's system prompt:\n%s\nwant it to say a terminal chat, and no Discord", got)
	}
}

// TestMasterPromptFlagsFailingRoles: the pre-send check. A member whose
// last tasks in the channel failed, and one blocked in this turn now,
// are flagged in the master's prompt; members with a clean record are
// not mentioned, and a team with nothing to flag gets no section.
func TestMasterPromptFlagsFailingRoles(t *testing.T) {
	t.Parallel()
	tc := turnContext{
		session: Session{Goal: "Launch the beta"},
		roster:  DefaultRoles(),
		turn:    Turn{AuthorID: "42", Content: "Write the announcement", Round: 1, State: TurnRunning},
		tasks: []Task{
			{ID: 10, Round: 1, Role: "researcher", Instruction: "List the features", State: TaskDone, Result: "A, B"},
			{ID: 11, Round: 1, Role: "engineer", Instruction: "Check B", State: TaskBlocked, Result: "no access to the repo"},
		},
		maxRounds: 3,
		tracks: map[string]RoleTrack{
			"writer":     {Last: 10, Failed: 0, Timeout: 3},
			"planner":    {Last: 4, Failed: 1, Timeout: 1, Blocked: 1},
			"researcher": {Last: 10, NeedInfo: 2},
			"engineer":   {Last: 6, Blocked: 1},
		},
	}
	msgs := masterMessages(tc)
	system := msgs[0].Content
	for _, want := range []string{
		"- writer: 3 of its last 10 tasks failed (timeouts)\n",
		"- planner: 2 of its last 4 tasks failed (1 timed out); 1 of its last 4 ended blocked\n",
		"- engineer: 1 of its last 6 ended blocked; blocked now\n",
	} {
		if !strings.Contains(system, want) {
			t.Errorf("the master's prompt lacks %q", want)
		}
	}
	if strings.Count(system, "- researcher: ") != 1 || strings.Count(system, "- reviewer: ") != 1 {
		t.Errorf("a member with nothing to flag is flagged:\n%s", system)
	}
	golden.Check(t, "master_prompt_reliability.golden", renderMessages(msgs))

	tc.tracks = map[string]RoleTrack{"writer": {Last: 10, NeedInfo: 1}}
	tc.tasks = tc.tasks[:1]
	if s := masterMessages(tc)[0].Content; strings.Contains(s, "How members did lately") {
		t.Errorf("a team with nothing to flag got a reliability section:\n%s", s)
	}
}
