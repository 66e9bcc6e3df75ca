package master

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// A master model that answers in text although it must call a tool is
// named to the operator once per model, however many turns it answers.
func TestOrchestratorNamesAModelThatAnswersInText(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	texts := &scriptLLM{}
	for range 3 {
		texts.replies = append(texts.replies, func() (ChatResponse, error) { return ChatResponse{Content: "I'll just answer myself."}, nil })
	}
	f := &orchFake{sess: Session{ID: 1}, roster: DefaultRoles()}
	o := NewOrchestrator(OrchestratorConfig{Owner: "p", Model: "tiny-model"}, f, texts, slog.New(slog.NewTextHandler(&logs, nil)))
	for i := range 3 {
		f.turn = Turn{ID: int64(10 + i), SessionID: 1, State: TurnRunning, Content: "hi"}
		o.Step(t.Context(), 1)
		if f.turn.State != TurnDone {
			t.Fatalf("turn %d: state %s, want done (a text answer is a reply)", i, f.turn.State)
		}
	}
	if n := strings.Count(logs.String(), "answered in text instead of calling a tool"); n != 1 {
		t.Errorf("the warning was logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "model=tiny-model") {
		t.Errorf("the warning does not name the model:\n%s", logs.String())
	}
}

// OrchestratorConfig.Instructions replaces the master's instructions;
// the goal and the team stay.
func TestOrchestratorInstructions(t *testing.T) {
	t.Parallel()
	var system string
	llm := llmFunc(func(_ context.Context, req ChatRequest) (ChatResponse, error) {
		system = req.Messages[0].Content
		return ChatResponse{ToolCalls: []ToolCall{{ID: "c", Name: ToolReply, Arguments: `{"text":"ok"}`}}}, nil
	})
	for _, c := range []struct{ instructions, want, absent string }{
		{"", "How you work:", "Always answer in haiku."},
		{"Always answer in haiku.", "Always answer in haiku.", "How you work:"},
	} {
		f := &orchFake{turn: Turn{ID: 7, SessionID: 1, State: TurnRunning, Content: "hi"}, sess: Session{ID: 1, Goal: "ship it"}, roster: DefaultRoles()}
		o := NewOrchestrator(OrchestratorConfig{Owner: "p", Model: "m", Instructions: c.instructions}, f, llm, slog.New(slog.DiscardHandler))
		o.Step(t.Context(), 1)
		if !strings.Contains(system, c.want) || strings.Contains(system, c.absent) || !strings.Contains(system, "ship it") || !strings.Contains(system, "- researcher:") {
			t.Errorf("instructions %q: system prompt\n%s\nwant %q, the goal and the team, not %q", c.instructions, system, c.want, c.absent)
		}
	}
}

// llmFunc is an LLM of one function.
type llmFunc func(context.Context, ChatRequest) (ChatResponse, error)

func (f llmFunc) Chat(ctx context.Context, req ChatRequest) (ChatResponse, error) { return f(ctx, req) }
