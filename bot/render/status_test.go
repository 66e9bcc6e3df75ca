package render

import (
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/internal/golden"
	"github.com/callonbot/callon/master"
)

func TestStatusGolden(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ts := master.TurnStatus{
		Turn:      master.Turn{ID: 7, Round: 1, State: master.TurnRunning},
		StartedAt: start,
		Tasks: []master.Task{
			{ID: 1, Round: 1, Role: "researcher", State: master.TaskRunning, StartedAt: start.Add(time.Second)},
			{ID: 2, Round: 1, Role: "writer", State: master.TaskQueued},
			{ID: 3, Round: 1, Role: "reviewer", State: master.TaskDone, StartedAt: start, EndedAt: start.Add(4 * time.Second), Result: "SECRET RESULT"},
			{ID: 4, Round: 1, Role: "scout", State: master.TaskRunning, StartedAt: start.Add(2 * time.Second)},
			{ID: 5, Round: 1, Role: "engineer", State: master.TaskApproval, StartedAt: start.Add(2 * time.Second)},
		},
		Progress: map[int64]master.Progress{1: {Percent: 40, Note: "reading the docs"}},
		Calls: map[int64]master.ToolActivity{
			4: {Tool: "fetch_url", Args: `{"url":"https://example.com/@everyone"}`},
			5: {Tool: "git__push", Args: "{\"branch\":\"`main`\"}"},
			3: {Tool: "never__shown", Args: "{}"},
		},
	}
	got := Status(ts, start.Add(12*time.Second))
	if strings.Contains(got, "SECRET RESULT") {
		t.Errorf("status shows a worker's result:\n%s", got)
	}
	ts.Turn.State, ts.RepliedAt = master.TurnDone, start.Add(75*time.Second)
	golden.Check(t, "status.golden", got+"\n---\n"+Settled(ts, nil)+"\n")
}
