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
