package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/callonbot/callon/llm/llmfake"
)

// turnKind is one shape of turn the bench measures.
type turnKind struct {
	name  string // also the marker the fake master routes by
	what  string
	tasks []task // what the master delegates; none: a direct answer
	// modelCalls is how many model calls are on the critical path.
	modelCalls int
}

type task struct {
	Role        string `json:"role"`
	Instruction string `json:"instruction"`
	DependsOn   []int  `json:"depends_on,omitempty"`
}

var roles = []string{"researcher", "planner", "engineer", "writer", "reviewer"}

func fanOut(n int) []task {
	var ts []task
	for _, r := range roles[:n] {
		ts = append(ts, task{Role: r, Instruction: "do your part"})
	}
	return ts
}

var turnKinds = []turnKind{
	{name: "direct", what: "the master answers at once (1 model call)", modelCalls: 1},
	{name: "parallel3", what: "3 workers in parallel, then the merged reply", tasks: fanOut(3), modelCalls: 3},
	{name: "parallel5", what: "5 workers in parallel, then the merged reply", tasks: fanOut(5), modelCalls: 3},
	{name: "chain2", what: "2 workers one after the other, then the merged reply",
		tasks: []task{{Role: "researcher", Instruction: "find"}, {Role: "writer", Instruction: "write it up", DependsOn: []int{0}}}, modelCalls: 4},
}

// script answers as the bench's master and workers: a message marked
// "[kind]" gets that kind's decision, every round's results get the
// reply, every worker reports done; each answer takes latency.
func script(latency time.Duration) llmfake.Script {
	answer := func(r llmfake.Reply) llmfake.Reply {
		if latency > 0 {
			return llmfake.Delay(latency, r)
		}
		return r
	}
	return func(req llmfake.Request) llmfake.Reply {
		if !strings.Contains(req.System(), "You are the coordinator of a team") {
			return answer(llmfake.Call("report", map[string]any{"status": "done", "result": "done: the part asked for"}))
		}
		if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "tool" {
			return answer(llmfake.Call("reply", map[string]any{"text": "Here is what the team found."}))
		}
		last := req.LastUser()
		for _, k := range turnKinds {
			if strings.Contains(last, "["+k.name+"]") && len(k.tasks) > 0 {
				return answer(llmfake.Call("delegate", map[string]any{"tasks": k.tasks}))
			}
		}
		return answer(llmfake.Call("reply", map[string]any{"text": "A direct answer."}))
	}
}

// warmup is how many turns of each kind run before the measured ones.
const warmup = 2

// turns measures each kind of turn in a team of its own.
func (b *bench) turns(ctx context.Context) ([]StageResult, error) {
	w, err := b.newWorld(ctx, script(b.sizes.ModelLatency))
	if err != nil {
		return nil, err
	}
	defer w.close()
	if b.deps.Statements {
		w.sql = &sqlLog{}
	}
	if err := w.start(ctx); err != nil {
		return nil, err
	}
	threads := map[string]string{}
	for _, k := range turnKinds {
		threads[k.name] = w.team("bench " + k.name)
	}
	// The background's statements (polls, sweeps, heartbeats of nothing)
	// are measured idle and taken out of the per-turn figure.
	w.settle()
	if w.sql != nil {
		w.sql.record()
	}
	idleFrom, idleStmts := time.Now(), w.statements.Load()
	// A minute: every periodic job (the sweeps, the expired holds' once a
	// minute, each consumer's 10 s safety poll) runs in it as often as it
	// does in any minute.
	idle := time.Minute
	if b.sizes.Turns < 10 {
		idle = 500 * time.Millisecond // --quick
	}
	select {
	case <-time.After(idle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	idleRate := float64(w.statements.Load()-idleStmts) / time.Since(idleFrom).Seconds()
	var idleList []Statement
	if w.sql != nil {
		idleList = w.sql.stop(int(idle / time.Second))
	}

	var out []StageResult
	for _, k := range turnKinds {
		thread := threads[k.name]
		for i := range min(warmup, b.sizes.Turns) {
			w.turn(thread, fmt.Sprintf("[%s] warm-up %d", k.name, i))
		}
		w.settle()
		if w.sql != nil {
			w.sql.record()
		}
		from, calls, stmts := time.Now(), w.restCalls(), w.statements.Load()
		var over []time.Duration
		var modelSum time.Duration
		for i := range b.sizes.Turns {
			lat, model := w.turn(thread, fmt.Sprintf("[%s] turn %d", k.name, i))
			over = append(over, lat-model)
			modelSum += model
		}
		w.settle()
		n := float64(b.sizes.Turns)
		background := idleRate * time.Since(from).Seconds()
		var listed []Statement
		if w.sql != nil {
			listed = w.sql.stop(b.sizes.Turns)
		}
		out = append(out, StageResult{
			Statements: listed,
			Name:       "turn." + k.name, Samples: len(over), Latency: dist(over),
			What: "turn overhead (reply latency minus model time): " + k.what,
			Values: []Value{
				{"rest", float64(w.restCalls()-calls) / n, "calls/turn"},
				{"sql", max(0, (float64(w.statements.Load()-stmts)-background)/n), "statements/turn"},
				{"model", ms(modelSum) / n, "ms/turn"},
			},
		})
	}
	idleStage := StageResult{Name: "turn.idle", Samples: 1, What: "statements a running callon sends with nothing to do",
		Values: []Value{{"sql", idleRate, "statements/s"}}, Statements: idleList}
	if idleList != nil {
		idleStage.What += " (listed: per second)"
	}
	out = append(out, idleStage)
	return out, w.tb.err()
}

// settle waits until every status message in the world's threads is
// settled (none shows a running turn), so that a turn's trailing edits
// are counted with it.
func (w *world) settle() {
	w.wait(func() bool {
		for _, th := range w.dc.Threads(w.dc.ChannelID("general")) {
			for _, m := range w.dc.Messages(th.ID) {
				if m.AuthorID == w.dc.BotUserID() && strings.HasPrefix(m.Content, "⏳") && !m.Deleted {
					return false
				}
			}
		}
		return true
	}, "the status messages to settle")
}

// contextGrowth is the context stage: the master's prompt at some turns
// of one long session.
func (b *bench) contextGrowth(ctx context.Context) ([]StageResult, error) {
	w, err := b.newWorld(ctx, script(0))
	if err != nil {
		return nil, err
	}
	defer w.close()
	if err := w.start(ctx); err != nil {
		return nil, err
	}
	thread := w.team("bench context")
	n := b.sizes.ContextTurns
	marks := map[int]bool{n: true}
	for _, m := range []int{5, 50, 100} {
		if m < n {
			marks[m] = true
		}
	}
	var vals []Value
	at := map[int]float64{}
	for i := 1; i <= n; i++ {
		text := fmt.Sprintf("[direct] context turn %d: a question of ordinary length about the plan", i)
		w.turn(thread, text)
		if !marks[i] {
			continue
		}
		chars := -1
		for _, r := range w.ai.Requests() {
			if strings.Contains(r.Request.LastUser(), text) {
				chars = 0
				for _, m := range r.Request.Messages {
					chars += len([]rune(m.Content))
				}
			}
		}
		if chars < 0 {
			return nil, fmt.Errorf("no master request for turn %d", i)
		}
		at[i] = float64(chars)
		vals = append(vals, Value{fmt.Sprintf("turn %d", i), float64(chars), "chars"})
	}
	if half := n / 2; at[half] > 0 {
		vals = append(vals, Value{fmt.Sprintf("turn %d / turn %d", n, half), at[n] / at[half], "×"})
	}
	return []StageResult{{Name: "context", Samples: len(at), Values: vals,
		What: "the master's prompt (characters of its messages) as one session grows"}}, w.tb.err()
}
