package render

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/internal/golden"
	"github.com/callonbot/callon/master"
)

func TestTeamEmbedGolden(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	roster := master.DefaultRoles()[:3]
	roster[1].Model = "gpt-4o"
	v := master.TeamView{
		Session: master.Session{ID: 7, Goal: "Launch the beta in March", CreatedAt: start, Usage: master.Usage{PromptTokens: 1200, CompletionTokens: 340}},
		Roster:  roster,
		Turn:    &master.Turn{ID: 3, State: master.TurnRunning, Round: 1},
		Tasks: []master.Task{
			{ID: 10, Round: 1, Role: "researcher", State: master.TaskRunning, CreatedAt: start, StartedAt: start.Add(time.Minute)},
			{ID: 11, Round: 1, Role: "planner", State: master.TaskDone, CreatedAt: start, StartedAt: start, EndedAt: start.Add(40 * time.Second), Result: "SECRET"},
			{ID: 12, Round: 1, Role: "engineer", State: master.TaskQueued, CreatedAt: start, DependsOn: []int64{10}},
		},
		Progress: map[int64]master.Progress{10: {Percent: 60, Note: "comparing vendors"}},
		Signals: []master.Signal{
			{Kind: master.SignalTaskComplete, TaskID: 11, Role: "planner", Payload: json.RawMessage(`{"state": "done"}`), At: start.Add(40 * time.Second)},
			{Kind: master.SignalAck, TaskID: 10, Role: "researcher", Payload: json.RawMessage(`{"worker": "w1", "attempt": 1}`), At: start.Add(time.Minute)},
			{Kind: master.SignalProgress, TaskID: 10, Role: "researcher", Payload: json.RawMessage(`{"percent": 60, "note": "comparing vendors"}`), At: start.Add(70 * time.Second)},
		},
		Reliability: []master.Reliability{{Role: "planner", Tasks: 10, Done: 6, Failed: 1, Timeout: 2, Blocked: 1,
			Median: 42 * time.Second, P90: 95 * time.Second, TokensPerTask: 3120, LastFailure: "SECRET REASON", Open: 1}},
		Now: start.Add(2 * time.Minute),
	}
	v.WorkerModel = "gpt-4o-mini"
	e := Team(v)
	if e.total() > embedTotalMax {
		t.Errorf("embed has %d characters, want at most %d", e.total(), embedTotalMax)
	}
	b, _ := json.MarshalIndent(e, "", "  ")
	if strings.Contains(string(b), "SECRET") { // a result, or a failure's reason (model text)
		t.Error("/team shows a worker's result")
	}
	golden.Check(t, "team_embed.golden", string(b)+"\n")
}

func TestEmbedFitsDiscordLimits(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a very long line of text\n", 400)
	e := Embed{Title: strings.Repeat("t", 300), Description: long + long, Footer: long}
	for range 8 {
		e.Fields = append(e.Fields, EmbedField{Name: strings.Repeat("n", 300), Value: long})
	}
	f := e.Fit()
	if f.total() > embedTotalMax || len([]rune(f.Title)) > embedTitleMax || len([]rune(f.Description)) > embedDescriptionMax {
		t.Errorf("Fit left %d characters (title %d, description %d)", f.total(), len([]rune(f.Title)), len([]rune(f.Description)))
	}
	for _, fl := range f.Fields {
		if len([]rune(fl.Value)) > embedFieldValueMax || len([]rune(fl.Name)) > embedFieldNameMax {
			t.Errorf("field %q… too long", fl.Name[:10])
		}
	}
}
