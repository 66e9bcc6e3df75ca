package llm

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/callonbot/callon/master"
)

// Router is a master.LLM over several OpenAI-compatible servers: a model
// written "<provider>/<model>" goes to that provider's client as
// "<model>"; any other model goes to the default client. Its clients
// share one bound on concurrent requests.
type Router struct {
	def   *Client
	named map[string]*Client
}

var _ master.LLM = (*Router)(nil)

// NewRouter returns a router whose default client is made from def and
// whose named clients are made from named, all bounded together by
// def.MaxConcurrent.
func NewRouter(def Config, named map[string]Config, logger *slog.Logger) *Router {
	n := def.MaxConcurrent
	if n <= 0 {
		n = DefaultMaxConcurrent
	}
	def.slots = make(chan struct{}, n)
	r := &Router{def: New(def, logger), named: map[string]*Client{}}
	for name, cfg := range named {
		cfg.slots = def.slots
		cfg.MaxRetries, cfg.Timeout = def.MaxRetries, def.Timeout
		r.named[name] = New(cfg, logger.With("provider", name))
	}
	return r
}

// route is the client for a model and the model's name on it.
func (r *Router) route(model string) (*Client, string, string) {
	if head, rest, ok := strings.Cut(model, "/"); ok {
		if c, ok := r.named[head]; ok {
			return c, head, rest
		}
	}
	return r.def, "", model
}

// Chat sends the request to the model's provider.
func (r *Router) Chat(ctx context.Context, req master.ChatRequest) (master.ChatResponse, error) {
	c, _, name := r.route(req.Model)
	full := req.Model
	req.Model = name
	resp, err := c.Chat(ctx, req)
	if err != nil && name != full {
		err = fmt.Errorf("provider of %s: %w", full, err)
	}
	return resp, err
}
