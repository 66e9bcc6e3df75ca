package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/callonbot/callon/master"
)

// LLM wraps a model so that each of its calls is counted for caller
// ("master" or "worker"): calls by result, latency, tokens, and cost for
// models with a price.
func (r *Registry) LLM(caller string, next master.LLM) master.LLM {
	return &meteredLLM{r: r, caller: caller, next: next}
}

type meteredLLM struct {
	r      *Registry
	caller string
	next   master.LLM
}

// Chat implements master.LLM.
func (m *meteredLLM) Chat(ctx context.Context, req master.ChatRequest) (master.ChatResponse, error) {
	start := time.Now()
	resp, err := m.next.Chat(ctx, req)
	r, model := m.r, req.Model
	result := "ok"
	switch {
	case err == nil:
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		result = "canceled"
	case master.ErrorCode(err) == master.EModel:
		result = "refused"
	default:
		result = "error"
	}
	r.llmCalls.WithLabelValues(m.caller, model, result).Inc()
	r.llmDuration.WithLabelValues(m.caller, model).Observe(time.Since(start).Seconds())
	u := resp.Usage
	if u.PromptTokens > 0 {
		r.llmTokens.WithLabelValues(m.caller, model, "prompt").Add(float64(u.PromptTokens))
	}
	if u.CompletionTokens > 0 {
		r.llmTokens.WithLabelValues(m.caller, model, "completion").Add(float64(u.CompletionTokens))
	}
	if p, ok := r.prices[model]; ok && u.Total() > 0 {
		r.llmCost.WithLabelValues(m.caller, model).Add((float64(u.PromptTokens)*p.Prompt + float64(u.CompletionTokens)*p.Completion) / 1e6)
	}
	return resp, err
}
