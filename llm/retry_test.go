package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/callonbot/callon/llm/llmtest"
	"github.com/callonbot/callon/master"
)

func TestRetryAfterOf(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.25"}, 250 * time.Millisecond},
		{"http date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0},
		{"milliseconds win", map[string]string{"Retry-After": "2", "retry-after-ms": "1500"}, 1500 * time.Millisecond},
		{"bad milliseconds fall back", map[string]string{"Retry-After": "2", "retry-after-ms": "x"}, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := retryAfterOf(h, now); got != tt.want {
				t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	c := New(Config{MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}, nil)
	for attempt, ceiling := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		ceiling *= time.Millisecond
		for range 50 {
			if got := c.backoff(attempt+1, 0); got < 0 || got > ceiling {
				t.Fatalf("attempt %d: got %v, want within [0, %v]", attempt+1, got, ceiling)
			}
		}
	}
	if got := c.backoff(1000, 0); got < 0 || got > time.Second {
		t.Errorf("attempt 1000: got %v, want within [0, 1s]", got)
	}

	tests := []struct {
		maxBackoff, retryAfter, want time.Duration
	}{
		{time.Second, 300 * time.Millisecond, 300 * time.Millisecond}, // honoured exactly
		{time.Second, 30 * time.Second, 30 * time.Second},             // beyond MaxBackoff, still honoured
		{time.Second, 10 * time.Minute, maxRetryAfter},                // but capped
		{5 * time.Minute, 2 * time.Minute, 2 * time.Minute},           // a large MaxBackoff lifts the cap
	}
	for _, tt := range tests {
		c := New(Config{MinBackoff: time.Millisecond, MaxBackoff: tt.maxBackoff}, nil)
		if got := c.backoff(1, tt.retryAfter); got != tt.want {
			t.Errorf("MaxBackoff %v, Retry-After %v: got %v, want %v", tt.maxBackoff, tt.retryAfter, got, tt.want)
		}
	}
}

func TestIsRetryable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{&StatusError{Status: 429}, true},
		{&StatusError{Status: 408}, true},
		{&StatusError{Status: 500}, true},
		{&StatusError{Status: 503}, true},
		{&StatusError{Status: 400}, false},
		{&StatusError{Status: 401}, false},
		{&StatusError{Status: 404}, false},
		{fmt.Errorf("chat m: %w", &StatusError{Status: 502}), true},
		{&transientError{errors.New("connection reset")}, true},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{errors.New("answer has no choices"), false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := IsRetryable(tt.err); got != tt.want {
			t.Errorf("IsRetryable(%v): got %v, want %v", tt.err, got, tt.want)
		}
	}
}

// roundTripFunc adapts a function to http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestRetriesNetworkErrors(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Always(llmtest.Text("ok")))
	var calls atomic.Int32
	flaky := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if calls.Add(1) == 1 {
			return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
		}
		return http.DefaultTransport.RoundTrip(r)
	})
	c := New(Config{
		BaseURL: srv.URL(), APIKey: srv.APIKey(), HTTPClient: &http.Client{Transport: flaky},
		MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
	}, nil)
	resp, err := c.Chat(context.Background(), master.ChatRequest{Model: "m", Messages: []master.Message{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if resp.Content != "ok" || calls.Load() != 2 {
		t.Errorf("got %q after %d round trips, want ok after 2", resp.Content, calls.Load())
	}
}

func TestNetworkErrorGivesUpRetryable(t *testing.T) {
	t.Parallel()
	refused := roundTripFunc(func(*http.Request) (*http.Response, error) {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	})
	c := New(Config{
		BaseURL: "http://llm.invalid/v1", APIKey: "k", HTTPClient: &http.Client{Transport: refused},
		MaxRetries: 1, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
	}, nil)
	_, err := c.Chat(context.Background(), master.ChatRequest{Model: "m"})
	if !IsRetryable(err) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("got error %v, want a retryable connection refused", err)
	}
}

func TestToOpenAIModelQuirks(t *testing.T) {
	t.Parallel()
	zero := float32(0)
	req := master.ChatRequest{Model: "o3-mini", MaxTokens: 100, Temperature: &zero}
	out, err := toOpenAI(req)
	if err != nil {
		t.Fatal(err)
	}
	if out.MaxTokens != 0 || out.MaxCompletionTokens != 100 || out.Temperature != 0 {
		t.Errorf("reasoning model: got max_tokens %d, max_completion_tokens %d, temperature %v; want 0, 100, omitted",
			out.MaxTokens, out.MaxCompletionTokens, out.Temperature)
	}
	req.Model = "llama3.1"
	out, err = toOpenAI(req)
	if err != nil {
		t.Fatal(err)
	}
	if out.MaxTokens != 100 || out.MaxCompletionTokens != 0 || out.Temperature == 0 {
		t.Errorf("other model: got max_tokens %d, max_completion_tokens %d, temperature %v; want 100, 0, near zero",
			out.MaxTokens, out.MaxCompletionTokens, out.Temperature)
	}
	if _, err := toOpenAI(master.ChatRequest{}); err == nil {
		t.Error("got no error for a request without a model")
	}
}

func TestFromOpenAIFillsMissingIDs(t *testing.T) {
	t.Parallel()
	resp := openai.ChatCompletionResponse{Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{
		ToolCalls: []openai.ToolCall{{Function: openai.FunctionCall{Name: "a"}}, {Function: openai.FunctionCall{Name: "b"}}},
	}}}}
	out, err := fromOpenAI(resp)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.ToolCalls) != 2 || out.ToolCalls[0].ID == "" || out.ToolCalls[0].ID == out.ToolCalls[1].ID {
		t.Errorf("got tool calls %+v, want distinct ids", out.ToolCalls)
	}
	if _, err := fromOpenAI(openai.ChatCompletionResponse{}); err == nil {
		t.Error("got no error for an answer without choices")
	}
}
