// Package llm implements master.LLM over any OpenAI-compatible
// chat-completions server (OpenAI, Ollama, vLLM, OpenRouter…) with
// go-openai, the only package that imports it. It owns what every call
// needs: a per-attempt timeout, a bound on concurrent calls, retries of
// rate limits, server errors and network failures with backoff (honouring
// Retry-After), token usage, and errors that never carry the API key.
package llm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/callonbot/callon/master"
)

// Defaults for the zero fields of Config.
const (
	DefaultMaxRetries    = 4
	DefaultMinBackoff    = 500 * time.Millisecond
	DefaultMaxBackoff    = 20 * time.Second
	DefaultTimeout       = 120 * time.Second
	DefaultMaxConcurrent = 8
)

// Config configures a Client. Zero fields take the defaults above.
type Config struct {
	// BaseURL is the API base including the version, like
	// https://api.openai.com/v1 (the default).
	BaseURL string
	APIKey  string
	// HTTPClient sends the requests; nil uses a new http.Client. Timeouts
	// come from Timeout, so it needs none of its own.
	HTTPClient *http.Client
	// MaxRetries bounds the retries after a failed attempt; negative means
	// no retries.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// attempts: the wait before retry n is random in
	// [0, min(MaxBackoff, MinBackoff·2ⁿ)] ("full jitter"), unless the
	// server said how long to wait.
	MinBackoff, MaxBackoff time.Duration
	// Timeout bounds each attempt; an attempt that runs out is retried.
	Timeout time.Duration
	// MaxConcurrent bounds the HTTP requests in flight through this
	// Client (a call waiting to retry holds no slot); the process shares
	// one Client (or one Router) so that the bound is process-wide.
	MaxConcurrent int
	// Headers are sent with every request (a provider's own headers).
	Headers map[string]string
	// ToolDialect is DialectAuto to decode tool calls a model writes into
	// its text (see Decode), DialectStrict or "" to take tool_calls only.
	ToolDialect string

	// slots, when set, is the bound shared with other clients (a Router's).
	slots chan struct{}
}

// String describes the config without the API key.
func (c Config) String() string {
	return fmt.Sprintf("{BaseURL:%s APIKey:%s MaxRetries:%d MinBackoff:%v MaxBackoff:%v Timeout:%v MaxConcurrent:%d ToolDialect:%s}",
		c.BaseURL, mask(c.APIKey), c.MaxRetries, c.MinBackoff, c.MaxBackoff, c.Timeout, c.MaxConcurrent, c.ToolDialect)
}

// LogValue logs the config without the API key.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", c.BaseURL),
		slog.String("api_key", mask(c.APIKey)),
		slog.Int("max_retries", c.MaxRetries),
		slog.Duration("min_backoff", c.MinBackoff),
		slog.Duration("max_backoff", c.MaxBackoff),
		slog.Duration("timeout", c.Timeout),
		slog.Int("max_concurrent", c.MaxConcurrent),
		slog.String("tool_dialect", c.ToolDialect),
	)
}

func mask(key string) string {
	if key == "" {
		return ""
	}
	return redacted
}

// Client is an OpenAI-compatible chat model. It is safe for concurrent use.
type Client struct {
	api    *openai.Client
	key    string
	cfg    Config
	sem    chan struct{}
	logger *slog.Logger
}

var _ master.LLM = (*Client)(nil)

// New returns a Client for cfg; a nil logger discards.
func New(cfg Config, logger *slog.Logger) *Client {
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	cfg.MaxRetries = max(cfg.MaxRetries, 0)
	cfg.MinBackoff = cmp.Or(cfg.MinBackoff, DefaultMinBackoff)
	cfg.MaxBackoff = max(cmp.Or(cfg.MaxBackoff, DefaultMaxBackoff), cfg.MinBackoff)
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultTimeout)
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = DefaultMaxConcurrent
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	if len(cfg.Headers) > 0 {
		withHeaders := *hc
		withHeaders.Transport = headers{next: cmp.Or[http.RoundTripper](hc.Transport, http.DefaultTransport), set: cfg.Headers}
		hc = &withHeaders
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = cfg.BaseURL
	}
	oc.HTTPClient = capture{hc}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	sem := cfg.slots
	if sem == nil {
		sem = make(chan struct{}, cfg.MaxConcurrent)
	}
	return &Client{
		api:    openai.NewClientWithConfig(oc),
		key:    cfg.APIKey,
		cfg:    cfg,
		sem:    sem,
		logger: logger.With("component", "llm"),
	}
}

// Chat sends one chat completion request and returns the model's text,
// tool calls and token usage. Failed attempts are retried as Config says;
// the error of the last one is returned, a *StatusError when the server
// answered with an HTTP error.
func (c *Client) Chat(ctx context.Context, req master.ChatRequest) (master.ChatResponse, error) {
	op := "chat " + req.Model
	oreq, err := toOpenAI(req)
	if err != nil {
		return master.ChatResponse{}, fmt.Errorf("%s: %w", op, err)
	}
	var resp openai.ChatCompletionResponse
	start := time.Now()
	attempts, err := c.retry(ctx, op, func(ctx context.Context) error {
		var err error
		resp, err = c.api.CreateChatCompletion(ctx, oreq)
		return err
	})
	if err != nil {
		return master.ChatResponse{}, permanent(req.Model, c.wrap(op, attempts, err))
	}
	out, err := fromOpenAI(resp)
	if err != nil {
		return master.ChatResponse{}, fmt.Errorf("%s: %w", op, err)
	}
	if c.cfg.ToolDialect == DialectAuto && len(out.ToolCalls) == 0 && req.ToolChoice != "none" {
		if d := Decode(out.Content, req.Tools); len(d.Calls) > 0 {
			out.Content, out.ToolCalls, out.Dialect = d.Rest, d.Calls, d.Form
		}
	}
	// Priced by the model asked for: the name the operator's prices use,
	// whatever dated variant the server reports.
	out.Usage.Model = req.Model
	c.logger.DebugContext(ctx, "chat completed", "model", req.Model, "attempts", attempts,
		"duration", time.Since(start), "prompt_tokens", out.Usage.PromptTokens,
		"completion_tokens", out.Usage.CompletionTokens, "tool_calls", len(out.ToolCalls), "dialect", out.Dialect)
	return out, nil
}

// Models lists the ids of the models the server offers (GET /models); it
// makes a good startup check of the URL and key.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	const op = "list models"
	var list openai.ModelsList
	attempts, err := c.retry(ctx, op, func(ctx context.Context) error {
		var err error
		list, err = c.api.ListModels(ctx)
		return err
	})
	if err != nil {
		return nil, c.wrap(op, attempts, err)
	}
	ids := make([]string, len(list.Models))
	for i, m := range list.Models {
		ids[i] = m.ID
	}
	return ids, nil
}

// permanent turns an answer that retrying cannot change (a 4xx other than
// 408 and 429) into a *master.Error with code master.EModel, whose
// message says what an operator should fix; other errors pass unchanged.
func permanent(model string, err error) error {
	var se *StatusError
	if !errors.As(err, &se) || retryableStatus(se.Status) {
		return err
	}
	var msg string
	switch se.Status {
	case http.StatusUnauthorized:
		msg = "the LLM server rejected the API key (check OPENAI_API_KEY)"
	case http.StatusForbidden:
		msg = fmt.Sprintf("the LLM server refused access to the model `%s` (HTTP 403)", model)
	case http.StatusNotFound:
		msg = fmt.Sprintf("the model `%s` was not found on the LLM server (check CALLON_MASTER_MODEL, CALLON_WORKER_MODEL or the role's model, and OPENAI_BASE_URL; callon doctor lists what the server has)", model)
	case http.StatusBadRequest:
		msg = fmt.Sprintf("the LLM server rejected the request to `%s` as invalid (HTTP 400; does the model support tool calling?)", model)
	default:
		msg = fmt.Sprintf("the LLM server refused the request to `%s` (HTTP %d)", model, se.Status)
	}
	if se.Message != "" {
		msg += ": " + master.Truncate(se.Message, 200)
	}
	return &master.Error{Code: master.EModel, Message: msg, Err: err}
}

// wrap names the operation and the attempts made, and keeps the key out.
func (c *Client) wrap(op string, attempts int, err error) error {
	if attempts > 1 {
		err = fmt.Errorf("%s: after %d attempts: %w", op, attempts, err)
	} else {
		err = fmt.Errorf("%s: %w", op, err)
	}
	return redact(err, c.key)
}

// headers adds fixed headers to every request.
type headers struct {
	next http.RoundTripper
	set  map[string]string
}

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.set {
		r.Header.Set(k, v)
	}
	return h.next.RoundTrip(r)
}
