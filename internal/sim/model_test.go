package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/callonbot/callon/master"
)

// model is the master's scripted model: each call picks one of the
// decisions the tools offered allow, or a fault, from the sequence's
// random source. It never blocks. Now and then, while it "thinks", the
// world moves on: another process takes the session over and steps it,
// or the team is dissolved; then its decision comes back stale.
type model struct {
	seq     *sequence
	calls   int
	perTurn map[string]int // calls by the turn's message, as the model sees it
	// failed counts, by turn, the calls that failed as an unreachable
	// model: past the retry bound, the turn must have given up.
	failed map[int64]int
}

var errUnreachable = errors.New("connection refused")

func (m *model) Chat(ctx context.Context, req master.ChatRequest) (master.ChatResponse, error) {
	m.calls++
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == master.RoleUser {
			m.perTurn[req.Messages[i].Content]++
			break
		}
	}
	s := m.seq
	turn := s.runningTurn()
	if n := m.failed[turn]; turn != 0 && n > maxRetries {
		s.fatalf("the master's model was asked again for turn %d after %d failed calls; past %d retries the turn must give up", turn, n, maxRetries)
	}
	rng := s.rng
	usage := master.Usage{PromptTokens: 100, CompletionTokens: 10}
	failRate := 3
	if s.flaky {
		failRate = 30
	}
	switch r := rng.IntN(100); {
	case r < failRate:
		m.failed[turn]++
		return master.ChatResponse{}, errUnreachable
	case r < failRate+1:
		return master.ChatResponse{}, &master.Error{Code: master.EModel, Message: "the model `m` was not found on the LLM server"}
	case (r < failRate+3 || (s.crashy && r < 90)) && s.crashes && s.depth == 0:
		// The process dies during the call: nothing after it happens.
		s.crash()
		return master.ChatResponse{}, ctx.Err()
	case r >= 90 && s.depth == 0 && s.crashes:
		// While this call runs, the world moves on; the decision that
		// comes back is stale, and must change nothing.
		s.depth++
		switch rng.IntN(3) {
		case 0, 1:
			s.takeOver()
		default:
			s.trace = append(s.trace, "  the team is dissolved during a master call")
			s.dissolveNow()
		}
		s.depth--
	}
	offered := map[string]master.Tool{}
	for _, t := range req.Tools {
		offered[t.Name] = t
	}
	call := func(name string, args any) master.ChatResponse {
		b, _ := json.Marshal(args)
		return master.ChatResponse{Usage: usage, ToolCalls: []master.ToolCall{{ID: fmt.Sprint("c", m.calls), Name: name, Arguments: string(b)}}}
	}
	type choice struct {
		weight int
		make   func() master.ChatResponse
	}
	choices := []choice{
		{30, func() master.ChatResponse {
			return call(master.ToolReply, map[string]string{"text": m.seq.text("answer")})
		}},
		{4, func() master.ChatResponse { return master.ChatResponse{Usage: usage, Content: m.seq.text("plain")} }},
		{3, func() master.ChatResponse {
			return master.ChatResponse{Usage: usage, ToolCalls: []master.ToolCall{{ID: "bad", Name: master.ToolReply, Arguments: `{"text":`}}}
		}},
		{2, func() master.ChatResponse { return call("no_such_tool", map[string]string{}) }},
		{2, func() master.ChatResponse { return master.ChatResponse{Usage: usage} }},
	}
	if _, ok := offered[master.ToolAskUser]; ok {
		w := 10
		if _, ok := offered[master.ToolAnswerWorker]; ok {
			w = 25 // only the user knows: the question chains that are hardest to get right
			if m.seq.inquisitive {
				w = 80
			}
		}
		choices = append(choices, choice{w, func() master.ChatResponse {
			return call(master.ToolAskUser, map[string]string{"question": m.seq.text("question")})
		}})
	}
	if t, ok := offered[master.ToolDelegate]; ok {
		roles := enum(t.Parameters, "tasks", "items", "role")
		choices = append(choices, choice{35, func() master.ChatResponse {
			n := 1 + rng.IntN(3)
			var tasks []map[string]any
			for i := range n {
				task := map[string]any{"role": roles[rng.IntN(len(roles))], "instruction": m.seq.text("instruction")}
				if i > 0 && rng.IntN(3) == 0 {
					task["depends_on"] = []int{rng.IntN(i)}
				}
				if files := enum(t.Parameters, "tasks", "items", "attachments", "items"); len(files) > 0 && rng.IntN(2) == 0 {
					task["attachments"] = []string{files[rng.IntN(len(files))]}
				}
				tasks = append(tasks, task)
			}
			return call(master.ToolDelegate, map[string]any{"tasks": tasks})
		}})
	}
	if t, ok := offered[master.ToolReplan]; ok {
		roles := enum(offered[master.ToolDelegate].Parameters, "tasks", "items", "role")
		_ = t
		choices = append(choices, choice{4, func() master.ChatResponse {
			var sketch []map[string]string
			for _, r := range roles {
				if rng.IntN(3) > 0 {
					sketch = append(sketch, map[string]string{"name": r, "description": "does " + r})
				}
			}
			if len(sketch) == 0 || rng.IntN(3) == 0 {
				sketch = append(sketch, map[string]string{"name": fmt.Sprint("extra", rng.IntN(3)), "description": "an extra hand"})
			}
			return call(master.ToolReplan, map[string]any{"roles": sketch, "reason": "the sequence says so"})
		}})
	}
	if t, ok := offered[master.ToolAnswerWorker]; ok {
		waiting := enumInts(t.Parameters, "task")
		choices = append(choices, choice{20, func() master.ChatResponse {
			return call(master.ToolAnswerWorker, map[string]any{"task": waiting[rng.IntN(len(waiting))], "answer": m.seq.text("answer for a worker")})
		}})
	}
	total := 0
	for _, c := range choices {
		total += c.weight
	}
	r := rng.IntN(total)
	for _, c := range choices {
		if r < c.weight {
			return c.make(), nil
		}
		r -= c.weight
	}
	panic("unreachable")
}

// enum reads the string enum of a property nested in a tool's JSON
// schema: path names properties, "items" steps into an array.
func enum(schema []byte, path ...string) []string {
	var v any
	json.Unmarshal(schema, &v)
	for _, p := range path {
		obj, _ := v.(map[string]any)
		if p == "items" {
			v = obj["items"]
			continue
		}
		props, _ := obj["properties"].(map[string]any)
		v = props[p]
	}
	obj, _ := v.(map[string]any)
	list, _ := obj["enum"].([]any)
	var out []string
	for _, x := range list {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func enumInts(schema []byte, path ...string) []int {
	var out []int
	for _, s := range enum(schema, path...) {
		var n int
		fmt.Sscan(s, &n)
		out = append(out, n)
	}
	return out
}

// workerOutcome is a worker's scripted outcome; an inquisitive
// sequence's workers mostly need information.
func workerOutcome(rng *rand.Rand, inquisitive bool, text func(string) string) master.Outcome {
	usage := master.Usage{PromptTokens: 50, CompletionTokens: 5}
	if inquisitive && rng.IntN(2) == 0 {
		return master.Outcome{State: master.TaskNeedInfo, Question: text("what about"), Usage: usage}
	}
	switch r := rng.IntN(100); {
	case r < 50:
		return master.Outcome{State: master.TaskDone, Result: text("result"), Usage: usage}
	case r < 58:
		return master.Outcome{State: master.TaskFailed, Error: "model error: boom", Usage: usage}
	case r < 65:
		return master.Outcome{State: master.TaskBlocked, Result: text("blocked because"), Usage: usage}
	case r < 95:
		return master.Outcome{State: master.TaskNeedInfo, Question: text("what about"), Result: "so far", Usage: usage}
	default:
		return master.Outcome{State: master.TaskTimeout, Error: "timed out after 5m", Usage: usage}
	}
}

// text makes a text: mostly short, now and then long enough to be split
// into several messages, now and then with a NUL or bytes that are not
// UTF-8 (Postgres refuses both).
func (s *sequence) text(kind string) string {
	s.texts++
	t := fmt.Sprintf("%s %d", kind, s.texts)
	if s.rng.IntN(12) == 0 {
		var b strings.Builder
		b.WriteString(t)
		for i := range 40 + s.rng.IntN(200) {
			if i%15 == 14 {
				b.WriteString("\n\n")
			}
			fmt.Fprintf(&b, " word%d of a long text that goes on", i)
		}
		t = b.String()
	}
	switch s.rng.IntN(20) {
	case 0:
		t += "\x00"
	case 1:
		t += " caf\xe9 \xff\xfe"
	}
	return strings.TrimSpace(t)
}
