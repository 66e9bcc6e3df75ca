package master

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// spendFake is a SpendStore that grants holds from its func and records
// settlements.
type spendFake struct {
	HoldFunc func(h Hold) (Held, error)
	mu       sync.Mutex
	holds    []Hold
	settled  map[int64]Usage
}

func (f *spendFake) HoldSpend(_ context.Context, h Hold) (Held, error) {
	f.mu.Lock()
	f.holds = append(f.holds, h)
	f.mu.Unlock()
	return f.HoldFunc(h)
}

func (f *spendFake) SettleSpend(_ context.Context, id int64, u Usage) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.settled == nil {
		f.settled = map[int64]Usage{}
	}
	f.settled[id] = u
	return nil
}

// answers is an LLM that answers with f.
func answers(f func(ChatRequest) (ChatResponse, error)) LLM {
	return llmFunc(func(_ context.Context, req ChatRequest) (ChatResponse, error) { return f(req) })
}

// A call's worst case: its prompt at a token per byte (messages, tool
// calls, tool definitions), framing, images, and its answer's max_tokens.
func TestWorstCase(t *testing.T) {
	t.Parallel()
	req := ChatRequest{
		Messages: []Message{{Content: "abcd"}, {Content: "xy", Images: []Image{{}}},
			{ToolCalls: []ToolCall{{ID: "c1", Name: "fn", Arguments: `{"a":1}`}}}},
		Tools:     []Tool{{Name: "t", Description: "dd", Parameters: []byte(`{}`)}},
		MaxTokens: 100,
	}
	p, c := WorstCase(req)
	if want := int64(3*messageTokens + 4 + 2 + imageTokens + 2 + 2 + 7 + messageTokens + 1 + 2 + 2); p != want || c != 100 {
		t.Errorf("WorstCase = %d, %d; want %d, 100", p, c, want)
	}
}

// The meter holds a call's worst case (with max_tokens set to the bound
// when the call has none) before calling the model, and settles the hold
// to the usage the call returned, also when the call failed; a refused
// hold calls no model.
func TestMeterHoldsThenSettles(t *testing.T) {
	t.Parallel()
	f := &spendFake{HoldFunc: func(Hold) (Held, error) { return Held{ID: 7, Calls: 1}, nil }}
	var sent ChatRequest
	m := Meter{Store: f, LLM: answers(func(req ChatRequest) (ChatResponse, error) {
		sent = req
		return ChatResponse{Content: "hi", Usage: Usage{PromptTokens: 10, CompletionTokens: 2}}, nil
	}), MaxOutput: 500}
	resp, held, err := m.Chat(t.Context(), Hold{SessionID: 3, TaskID: 4}, ChatRequest{Model: "m", Messages: []Message{{Content: "hello"}}})
	if err != nil || resp.Content != "hi" || held.ID != 7 {
		t.Fatalf("Chat = %+v, %+v, %v", resp, held, err)
	}
	if sent.MaxTokens != 500 || f.holds[0].CompletionTokens != 500 || f.holds[0].PromptTokens != int64(messageTokens+5) ||
		f.holds[0].SessionID != 3 || f.holds[0].TaskID != 4 || f.holds[0].Model != "m" {
		t.Errorf("sent max_tokens %d, held %+v", sent.MaxTokens, f.holds[0])
	}
	if u := f.settled[7]; u.Total() != 12 || u.Model != "m" {
		t.Errorf("settled %+v, want the call's 12 tokens of model m", u)
	}

	boom := errors.New("model down")
	m.LLM = answers(func(ChatRequest) (ChatResponse, error) { return ChatResponse{Usage: Usage{PromptTokens: 5}}, boom })
	f.HoldFunc = func(Hold) (Held, error) { return Held{ID: 8}, nil }
	if _, held, err := m.Chat(t.Context(), Hold{SessionID: 3}, ChatRequest{Model: "m"}); !errors.Is(err, boom) || held.ID != 8 {
		t.Errorf("a failed call: %+v, %v", held, err)
	}
	if u := f.settled[8]; u.PromptTokens != 5 {
		t.Errorf("a failed call settled %+v, want the usage it returned", u)
	}

	called := false
	m.LLM = answers(func(ChatRequest) (ChatResponse, error) { called = true; return ChatResponse{}, nil })
	f.HoldFunc = func(Hold) (Held, error) { return Held{}, &BudgetError{Limit: 10, Used: 10} }
	if _, _, err := m.Chat(t.Context(), Hold{SessionID: 3}, ChatRequest{Model: "m"}); !errors.Is(err, ErrBudget) || called {
		t.Errorf("a refused hold: %v, model called %v", err, called)
	}
}

// A hold refused only because calls in flight hold the rest is asked
// again until they settle; a budget truly spent is refused at once.
func TestMeterWaitsForCallsInFlight(t *testing.T) {
	t.Parallel()
	n := 0
	f := &spendFake{HoldFunc: func(Hold) (Held, error) {
		n++
		if n < 3 {
			return Held{}, &BudgetError{Limit: 100, Used: 40, Held: 80}
		}
		return Held{ID: 1}, nil
	}}
	m := Meter{Store: f, LLM: answers(func(ChatRequest) (ChatResponse, error) { return ChatResponse{}, nil }), Log: slog.New(slog.DiscardHandler)}
	if _, held, err := m.Chat(t.Context(), Hold{}, ChatRequest{}); err != nil || held.ID != 1 || n != 3 {
		t.Errorf("after two busy refusals: %+v, %v (%d holds asked)", held, err, n)
	}
	spent := &BudgetError{Limit: 100, Used: 100, Held: 80}
	if spent.Busy() {
		t.Error("a budget used up is not busy")
	}
	if !strings.Contains(spent.Error(), "80 held by calls in flight") {
		t.Errorf("error %q", spent.Error())
	}
}
