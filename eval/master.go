package eval

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/callonbot/callon/master"
)

// The people of a case's thread.
const (
	ownerID  = "1001"
	memberID = "1002"
)

// runMaster runs one master case: callon's orchestrator decides on the
// situation's message in a world of its own; the scripted workers answer
// each round it delegates; then the decisions are graded.
func runMaster(ctx context.Context, cfg Config, m *meter, s Situation) Result {
	w := newWorld(s, m)
	orch := master.NewOrchestrator(masterConfig(cfg, cfg.caseCalls(s), catalogFunc(s.Catalog), w), w, m, cfg.Logger)
	c := &crew{acts: s.Workers, used: map[string]int{}, given: map[int64]Answer{}}
	drive(ctx, orch, w, cfg.Limits.MaxRounds, func(q []master.Task) bool { c.work(w, q); return true })
	r := Result{Case: s.Name, Tests: s.Tests}
	calls := m.take()
	measured(&r, calls)
	r.Decisions, r.End = w.result()
	r.Why = gradeMaster(s, w, calls)
	return r
}

// masterConfig is the orchestrator of a world: the deployment's limits,
// no retries later (a case has no later), the world as its Metrics.
func masterConfig(cfg Config, maxCalls int, catalog master.CatalogFunc, w *world) master.OrchestratorConfig {
	return master.OrchestratorConfig{
		Owner: "eval", Model: cfg.Model, MaxRounds: cfg.Limits.MaxRounds, MaxTasks: cfg.Limits.MaxTasks,
		MaxRoles: cfg.Limits.MaxRoles, History: cfg.Limits.History, MaxCalls: maxCalls, Retries: 0,
		Lease: time.Hour, Catalog: catalog, Metrics: worldMetrics{w: w}, Vision: cfg.Vision,
		Instructions: cfg.Instructions,
	}
}

// drive steps the orchestrator until the turn ends: after each step that
// delegated, work answers the queued tasks (false stops the turn). Every
// round costs at most one step and one answer per task, so it is bounded
// by the rounds allowed.
func drive(ctx context.Context, orch *master.Orchestrator, w *world, maxRounds int, work func([]master.Task) bool) {
	for range 2*maxRounds + 4 {
		if ctx.Err() != nil {
			return
		}
		orch.Step(ctx, sessionID)
		if _, end := w.result(); end != nil {
			return
		}
		q := w.queued()
		if len(q) == 0 || !work(q) {
			return
		}
	}
}

// worldMetrics is what a world learns from the orchestrator's Metrics:
// whether its turn ended with an apology, which its store calls alone do
// not tell.
type worldMetrics struct {
	master.NoMetrics
	w *world
}

func (m worldMetrics) TurnEnded(outcome master.TurnOutcome, _ time.Duration) {
	if outcome != master.OutcomeApology && outcome != master.OutcomeRefused {
		return
	}
	m.w.mu.Lock()
	defer m.w.mu.Unlock()
	if m.w.end != nil {
		m.w.end.Kind = endApology
	}
}

func (m worldMetrics) ToolCalled(caller, tool, result string) {
	if caller != "master" || result != "ok" {
		return
	}
	m.w.mu.Lock()
	defer m.w.mu.Unlock()
	m.w.attempted = append(m.w.attempted, tool)
}

// newWorld sets a situation's team, thread and message in memory.
func newWorld(s Situation, m *meter) *world {
	w := &world{meter: m, nextID: 100}
	w.session = master.Session{ID: sessionID, GuildID: "eval", ChannelID: "eval", ThreadID: "eval", OwnerID: ownerID,
		Goal: s.Goal, State: master.SessionActive}
	w.roster = roles(s.Roster)
	turnID := int64(len(s.History) + 1)
	n := int64(0)
	for _, e := range s.History {
		for i := range max(e.Repeat, 1) {
			n++
			num := fmt.Sprint(i + 1)
			w.history = append(w.history, master.Exchange{TurnID: n, AuthorID: ownerID,
				Message: strings.ReplaceAll(e.User, "{n}", num), Answer: strings.ReplaceAll(e.Team, "{n}", num), Asked: e.Asked})
		}
	}
	turnID = max(turnID, n+1)
	author := ownerID
	if s.Author == "member" {
		author = memberID
	}
	w.turn = master.Turn{ID: turnID, SessionID: sessionID, MessageID: "eval-message", GuildID: "eval", ChannelID: "eval",
		AuthorID: author, Content: s.Message, State: master.TurnRunning, Round: len(s.Rounds),
		AddressedTo: master.Addressee(s.Message, w.roster)}
	for i, f := range s.Attachments {
		w.atts = append(w.atts, master.Attachment{ID: int64(i + 1), SessionID: sessionID, TurnID: turnID, Position: i,
			Name: f.Name, ContentType: "text/plain", Size: int64(len(f.Text)), Kind: master.KindText,
			State: master.AttachmentStored, Data: []byte(f.Text)})
	}
	for r, round := range s.Rounds {
		for _, t := range round {
			w.nextID++
			task := master.Task{ID: w.nextID, SessionID: sessionID, TurnID: turnID, Round: r + 1, Role: t.Role,
				Instruction: t.Instruction, Attempt: 1}
			task.State, task.Result, task.Error = outcomeOf(Answer{Status: t.Status, Result: t.Result, Question: t.Question})
			if task.State == master.TaskNeedInfo {
				task.QA = []master.QA{{Question: t.Question}}
			}
			w.tasks = append(w.tasks, task)
		}
	}
	return w
}

// outcomeOf is a scripted answer's state, result and error.
func outcomeOf(a Answer) (master.TaskState, string, string) {
	switch a.Status {
	case "failed":
		return master.TaskFailed, "", a.Result
	case "blocked":
		return master.TaskBlocked, a.Result, ""
	case "need_info":
		return master.TaskNeedInfo, a.Result, ""
	}
	return master.TaskDone, a.Result, ""
}

// roles are a situation's roles as callon's.
func roles(defs []RoleDef) []master.Role {
	out := make([]master.Role, 0, len(defs))
	for _, d := range defs {
		out = append(out, master.Role{Name: d.Name, Description: d.Description, Prompt: d.Prompt, Tools: d.Tools})
	}
	return out
}

// catalogFunc is a situation's channel catalog.
func catalogFunc(defs []RoleDef) master.CatalogFunc {
	cat := roles(defs)
	return func(context.Context, string, string) ([]master.Role, error) { return cat, nil }
}

// crew is a situation's scripted workers.
type crew struct {
	acts  map[string]Act
	used  map[string]int   // answers given per role
	given map[int64]Answer // the answer each task got
}

// work answers the queued tasks as the situation scripts them: a task
// resumed with an answer gets its answer's Answered result.
func (c *crew) work(w *world, queued []master.Task) {
	for _, t := range queued {
		if w.task(t.ID).State != master.TaskQueued {
			continue // cancelled meanwhile: something it needed did not end done
		}
		a, resumed := c.given[t.ID]
		if resumed && len(t.QA) > 0 && t.QA[len(t.QA)-1].Answer != "" {
			result := a.Answered
			if result == "" {
				result = "With the answer given (" + t.QA[len(t.QA)-1].Answer + "), the task is done."
			}
			w.settle(t.ID, master.Outcome{State: master.TaskDone, Result: result})
			continue
		}
		a = c.next(t.Role)
		c.given[t.ID] = a
		st, result, errText := outcomeOf(a)
		w.settle(t.ID, master.Outcome{State: st, Result: result, Error: errText, Question: a.Question})
	}
}

// next is the role's next scripted answer; the last one repeats, and a
// role the situation does not script does the task with nothing to say.
func (c *crew) next(role string) Answer {
	act := c.acts[role]
	if len(act) == 0 {
		return Answer{Result: "The " + role + " did the task and has nothing notable to report."}
	}
	i := min(c.used[role], len(act)-1)
	c.used[role]++
	return act[i]
}
