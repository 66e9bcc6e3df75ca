package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/callonbot/callon/llm/llmfake"
)

// presenceCase is one configuration of a team's features (#23) and the
// turn the presence stage measures with it.
type presenceCase struct {
	name, what string
	features   string // the roles file's top-level features
	marker     string // what the turn's message asks of the script
	parts      int    // members' parts each reply posts (personas)
}

var presenceCases = []presenceCase{
	{name: "off", what: "a direct answer, every feature off", features: "memory: off\n", marker: "[direct]"},
	{name: "memory", what: "a direct answer with memory on (the default), nothing remembered", features: "memory: on\n", marker: "[direct]"},
	{name: "memory.remember", what: "a turn that remembers a note, then answers", features: "memory: on\n", marker: "[remember]"},
	{name: "review", what: "a direct answer reviewed (review: always), passed", features: "memory: off\nreview: always\n", marker: "[direct]"},
	{name: "review.merged", what: "3 workers, the merged reply reviewed (review: on), passed", features: "memory: off\nreview: on\n", marker: "[parallel3]"},
	{name: "personas", what: "a direct answer with one member's part (personas: on)", features: "memory: off\npersonas: on\n", marker: "[direct]", parts: 1},
}

// presenceScript is script with what the features add: the reviewer's
// verdict, a note remembered, a member's part when reply offers one.
func presenceScript(latency time.Duration) llmfake.Script {
	base := script(latency)
	n := 0
	return func(req llmfake.Request) llmfake.Reply {
		switch {
		case strings.Contains(req.System(), "You check a team's draft reply"):
			return llmfake.Call("verdict", map[string]any{"decision": "pass"})
		case !strings.Contains(req.System(), "You are the coordinator of a team"):
			return base(req)
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role != "tool" && strings.Contains(req.LastUser(), "[remember]") {
			n++
			return llmfake.Call("remember", map[string]any{"note": fmt.Sprintf("Bench fact number %d", n)})
		}
		if last.Role == "tool" || !strings.Contains(req.LastUser(), "[parallel3]") {
			if len(req.Tools) > 0 && strings.Contains(string(req.Tools[0].Parameters), `"exchange"`) {
				return llmfake.Call("reply", map[string]any{"text": "A direct answer.",
					"exchange": []map[string]string{{"member": "researcher", "text": "My part of it."}}})
			}
			if last.Role == "tool" && strings.Contains(last.Content, "Remembered as note") {
				return llmfake.Call("reply", map[string]any{"text": "Noted."})
			}
		}
		return base(req)
	}
}

// presence measures what each feature of #23 costs a turn: Postgres
// statements and Discord requests, each case in a world of its own.
func (b *bench) presence(ctx context.Context) ([]StageResult, error) {
	dir, err := os.MkdirTemp("", "callon-bench-presence")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var out []StageResult
	for _, c := range presenceCases {
		roles := filepath.Join(dir, c.name+".yaml")
		if err := os.WriteFile(roles, []byte(c.features), 0o600); err != nil {
			return nil, err
		}
		r, err := b.presenceCase(ctx, c, roles)
		if err != nil {
			return out, fmt.Errorf("presence %s: %w", c.name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func (b *bench) presenceCase(ctx context.Context, c presenceCase, roles string) (StageResult, error) {
	w, err := b.newWorld(ctx, presenceScript(b.sizes.ModelLatency), "CALLON_ROLES_FILE", roles)
	if err != nil {
		return StageResult{}, err
	}
	defer w.close()
	if err := w.start(ctx); err != nil {
		return StageResult{}, err
	}
	thread := w.team("bench presence " + c.name)
	for i := range min(warmup, b.sizes.Turns) {
		w.turn(thread, fmt.Sprintf("%s warm-up %d", c.marker, i))
	}
	w.settleParts(thread, c.parts*min(warmup, b.sizes.Turns))
	// The background's statements are measured idle and taken out, as
	// the turns stage does.
	idle := 2 * time.Second
	if b.sizes.Turns < 10 {
		idle = 500 * time.Millisecond // --quick
	}
	idleFrom, idleStmts := time.Now(), w.statements.Load()
	select {
	case <-time.After(idle):
	case <-ctx.Done():
		return StageResult{}, ctx.Err()
	}
	idleRate := float64(w.statements.Load()-idleStmts) / time.Since(idleFrom).Seconds()
	from, calls, stmts := time.Now(), w.restCalls(), w.statements.Load()
	var over []time.Duration
	for i := range b.sizes.Turns {
		lat, model := w.turn(thread, fmt.Sprintf("%s turn %d", c.marker, i))
		over = append(over, lat-model)
	}
	w.settleParts(thread, c.parts*(min(warmup, b.sizes.Turns)+b.sizes.Turns))
	n := float64(b.sizes.Turns)
	background := idleRate * time.Since(from).Seconds()
	return StageResult{
		Name: "presence." + c.name, Samples: len(over), Latency: dist(over), What: c.what,
		Values: []Value{
			{"rest", float64(w.restCalls()-calls) / n, "calls/turn"},
			{"sql", max(0, (float64(w.statements.Load()-stmts)-background)/n), "statements/turn"},
		},
	}, w.tb.err()
}

// settleParts waits for the status messages to settle and for the
// members' parts posted so far (parts in all) to be in the thread.
func (w *world) settleParts(thread string, parts int) {
	w.settle()
	w.wait(func() bool {
		n := 0
		for _, m := range w.dc.Messages(thread) {
			if m.WebhookID != "" && m.InteractionID == "" {
				n++
			}
		}
		return n >= parts
	}, "the members' parts")
}
