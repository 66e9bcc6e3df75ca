package eval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/callonbot/callon/llm"
	"github.com/callonbot/callon/master"
)

// ErrBound is a model call refused because the run made as many as it
// said it would at most.
var ErrBound = errors.New("the run's bound on model calls is reached")

// meter is the model under test as eval calls it: it refuses calls past
// the run's bound and records each call of the current case.
type meter struct {
	llm      master.LLM
	maxCalls int
	maxTok   int64

	mu     sync.Mutex
	calls  int
	tokens int64
	record []call // the current case's calls
}

// call is one model call of a case as eval saw it.
type call struct {
	Latency time.Duration
	Usage   master.Usage
	Err     error
	// Dialect is how its tool calls were written: "native", a text form
	// (llm.FormTags…), or "text" when it called none.
	Dialect string
	// Problem explains a text answer that wrote a call in a known form
	// that could not be taken (llm.Decoded.Problem).
	Problem string
	// Refused are the errors the previous answer's calls got back, as
	// the request shows them ("Error: …" tool messages).
	Refused []string
}

func newMeter(model master.LLM, maxCalls int, maxTokens int64) *meter {
	return &meter{llm: model, maxCalls: maxCalls, maxTok: maxTokens}
}

// Chat calls the model, within the run's bounds.
func (m *meter) Chat(ctx context.Context, req master.ChatRequest) (master.ChatResponse, error) {
	m.mu.Lock()
	if m.calls >= m.maxCalls {
		m.mu.Unlock()
		return master.ChatResponse{}, ErrBound
	}
	m.calls++
	m.mu.Unlock()
	c := call{Refused: refused(req.Messages)}
	start := time.Now()
	resp, err := m.llm.Chat(ctx, req)
	c.Latency, c.Usage, c.Err = time.Since(start), resp.Usage, err
	switch {
	case err != nil:
	case len(resp.ToolCalls) > 0:
		c.Dialect = cmp.Or(resp.Dialect, "native")
	default:
		c.Dialect = "text"
		c.Problem = llm.Decode(resp.Content, req.Tools).Problem
	}
	m.mu.Lock()
	m.tokens += resp.Usage.Total()
	m.record = append(m.record, c)
	m.mu.Unlock()
	return resp, err
}

// spent reports whether the run's tokens are used up.
func (m *meter) spent() (used, limit int64, over bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tokens, m.maxTok, m.tokens >= m.maxTok
}

// take returns the current case's calls and starts the next case.
func (m *meter) take() []call {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := m.record
	m.record = nil
	return out
}

// totals are the run's calls and tokens so far.
func (m *meter) totals() (int, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls, m.tokens
}

// budgetCheck is a hold of the worlds (HoldSpend): the run's token bound as
// a team budget, so callon's own code stops calling the model once it is
// spent.
func (m *meter) budgetCheck() error {
	if used, limit, over := m.spent(); over {
		return &master.BudgetError{Limit: limit, Used: used}
	}
	return nil
}

// refused are the errors callon sent back for the calls of the answer
// before this request: the tool messages after its last assistant
// message that start "Error: ".
func refused(msgs []master.Message) []string {
	var out []string
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role != master.RoleAssistant; i-- {
		if m := msgs[i]; m.Role == master.RoleTool && strings.HasPrefix(m.Content, "Error: ") {
			out = append([]string{strings.TrimPrefix(m.Content, "Error: ")}, out...)
		}
	}
	return out
}

// dialects lists the ways a case's calls were written, in order of first
// use.
func dialects(calls []call) []string {
	var out []string
	for _, c := range calls {
		if c.Dialect != "" && !slices.Contains(out, c.Dialect) {
			out = append(out, c.Dialect)
		}
	}
	return out
}

// usageOf sums the calls' tokens and latency.
func usageOf(calls []call) (tokens int64, latency time.Duration) {
	for _, c := range calls {
		tokens += c.Usage.Total()
		latency += c.Latency
	}
	return tokens, latency
}

// callError is the first error of the calls, for a report.
func callError(calls []call) string {
	for _, c := range calls {
		if c.Err != nil {
			return fmt.Sprintf("model call failed: %v", c.Err)
		}
	}
	return ""
}
