package master

import (
	"github.com/callonbot/callon/internal/golden"

	"fmt"
	"strings"
	"testing"
	"time"
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

func TestStatusGolden(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ts := TurnStatus{
		Turn:      Turn{ID: 7, Round: 1, State: TurnRunning},
		StartedAt: start,
		Tasks: []Task{
			{ID: 1, Round: 1, Role: "researcher", State: TaskRunning, StartedAt: start.Add(time.Second)},
			{ID: 2, Round: 1, Role: "writer", State: TaskQueued},
			{ID: 3, Round: 1, Role: "reviewer", State: TaskDone, StartedAt: start, EndedAt: start.Add(4 * time.Second), Result: "SECRET RESULT"},
			{ID: 4, Round: 1, Role: "scout", State: TaskRunning, StartedAt: start.Add(2 * time.Second)},
			{ID: 5, Round: 1, Role: "engineer", State: TaskApproval, StartedAt: start.Add(2 * time.Second)},
		},
		Progress: map[int64]Progress{1: {Percent: 40, Note: "reading the docs"}},
		Calls: map[int64]ToolActivity{
			4: {Tool: "fetch_url", Args: `{"url":"https://example.com/@everyone"}`},
			5: {Tool: "git__push", Args: "{\"branch\":\"`main`\"}"},
			3: {Tool: "never__shown", Args: "{}"},
		},
	}
	got := RenderStatus(ts, start.Add(12*time.Second))
	if strings.Contains(got, "SECRET RESULT") {
		t.Errorf("status shows a worker's result:\n%s", got)
	}
	ts.Turn.State, ts.RepliedAt = TurnDone, start.Add(75*time.Second)
	golden.Check(t, "status.golden", got+"\n---\n"+SettledStatus(ts, nil)+"\n")
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
