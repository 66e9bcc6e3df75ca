package llm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/llm"
	"github.com/callonbot/callon/llm/llmtest"
	"github.com/callonbot/callon/master"
)

// setup starts a fake server with script and a Client for it with tiny
// backoffs; tweak adjusts the config.
func setup(t *testing.T, script llmtest.Script, tweak ...func(*llm.Config)) (*llmtest.Server, *llm.Client) {
	t.Helper()
	srv := llmtest.New(t, script)
	cfg := llm.Config{
		BaseURL:    srv.URL(),
		APIKey:     srv.APIKey(),
		MinBackoff: time.Millisecond,
		MaxBackoff: 2 * time.Millisecond,
	}
	for _, f := range tweak {
		f(&cfg)
	}
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	return srv, llm.New(cfg, logger)
}

var delegateSchema = json.RawMessage(`{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"object","properties":{"role":{"type":"string","enum":["researcher","writer"]},"instruction":{"type":"string"}},"required":["role","instruction"]}}},"required":["tasks"]}`)

// masterRequest is a second-round master call: it has seen its own
// delegate call and the tool result.
func masterRequest() master.ChatRequest {
	temp := float32(0.2)
	return master.ChatRequest{
		Model: "gpt-4o",
		Messages: []master.Message{
			{Role: master.RoleSystem, Content: "You are the master."},
			{Role: master.RoleUser, Content: "plan a trip"},
			{Role: master.RoleAssistant, ToolCalls: []master.ToolCall{{ID: "call_a", Name: "delegate", Arguments: `{"tasks":[]}`}}},
			{Role: master.RoleTool, ToolCallID: "call_a", Content: "researcher: done"},
		},
		Tools: []master.Tool{
			{Name: "delegate", Description: "hand work to the team", Parameters: delegateSchema},
			{Name: "reply", Description: "answer the user"},
		},
		ToolChoice:  "required",
		Temperature: &temp,
		MaxTokens:   500,
	}
}

func TestChatMapsRequestAndResponse(t *testing.T) {
	t.Parallel()
	srv, client := setup(t, llmtest.Always(llmtest.Calls(
		llmtest.Text("thinking aloud"),
		llmtest.Call("delegate", map[string]any{"tasks": []map[string]any{{"role": "writer", "instruction": "draft"}}}),
		llmtest.Call("reply", map[string]any{"text": "on it"}),
	).WithUsage(120, 30)))

	resp, err := client.Chat(context.Background(), masterRequest())
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	want := master.ChatResponse{
		Content: "thinking aloud",
		ToolCalls: []master.ToolCall{
			{Name: "delegate", Arguments: `{"tasks":[{"instruction":"draft","role":"writer"}]}`},
			{Name: "reply", Arguments: `{"text":"on it"}`},
		},
		Usage: master.Usage{PromptTokens: 120, CompletionTokens: 30, Model: masterRequest().Model},
	}
	for i := range resp.ToolCalls {
		if resp.ToolCalls[i].ID == "" {
			t.Errorf("tool call %d has no id", i)
		}
		resp.ToolCalls[i].ID = ""
	}
	if resp.Content != want.Content || !slices.Equal(resp.ToolCalls, want.ToolCalls) || resp.Usage != want.Usage {
		t.Errorf("got %+v, want %+v", resp, want)
	}

	got := srv.Requests()[0].Request
	if got.Model != "gpt-4o" || got.ToolChoice != "required" || got.MaxTokens != 500 || got.Stream {
		t.Errorf("got model %q, tool choice %q, max tokens %d, stream %v", got.Model, got.ToolChoice, got.MaxTokens, got.Stream)
	}
	if got.Temperature == nil || *got.Temperature < 0.199 || *got.Temperature > 0.201 {
		t.Errorf("got temperature %v, want 0.2", got.Temperature)
	}
	wantMsgs := []llmtest.Message{
		{Role: "system", Content: "You are the master."},
		{Role: "user", Content: "plan a trip"},
		{Role: "assistant", ToolCalls: []llmtest.ToolCall{{ID: "call_a", Name: "delegate", Arguments: `{"tasks":[]}`}}},
		{Role: "tool", ToolCallID: "call_a", Content: "researcher: done"},
	}
	if len(got.Messages) != len(wantMsgs) {
		t.Fatalf("got %d messages, want %d", len(got.Messages), len(wantMsgs))
	}
	for i, m := range got.Messages {
		w := wantMsgs[i]
		if m.Role != w.Role || m.Content != w.Content || m.ToolCallID != w.ToolCallID || !slices.Equal(m.ToolCalls, w.ToolCalls) {
			t.Errorf("message %d: got %+v, want %+v", i, m, w)
		}
	}
	if names := got.ToolNames(); !slices.Equal(names, []string{"delegate", "reply"}) {
		t.Errorf("got tools %v, want [delegate reply]", names)
	}
	if enum := got.ToolEnum("delegate", "tasks", "role"); !slices.Equal(enum, []string{"researcher", "writer"}) {
		t.Errorf("got role enum %v, want [researcher writer]", enum)
	}
	if reply, _ := got.Tool("reply"); !strings.Contains(string(reply.Parameters), `"type":"object"`) {
		t.Errorf("got reply parameters %s, want an object schema", reply.Parameters)
	}
}

func TestChatSendsImagesAsParts(t *testing.T) {
	t.Parallel()
	srv, client := setup(t, llmtest.Always(llmtest.Text("a cat")))
	req := master.ChatRequest{Model: "gpt-4o", Messages: []master.Message{
		{Role: master.RoleUser, Content: "what is this?", Images: []master.Image{{Name: "cat.png", ContentType: "image/png", Data: []byte("PNG!")}}},
	}}
	if _, err := client.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	m := srv.Requests()[0].Request.Messages[0]
	if m.Content != "what is this?" || !slices.Equal(m.Images, []string{"data:image/png;base64,UE5HIQ=="}) {
		t.Errorf("got %q with images %v, want the text and one data URL", m.Content, m.Images)
	}
	if !bytes.Contains(srv.Requests()[0].Request.Body, []byte(`"type":"image_url"`)) {
		t.Errorf("the body has no image_url part: %s", srv.Requests()[0].Request.Body)
	}
}

func TestChatToolChoiceAndTemperature(t *testing.T) {
	t.Parallel()
	zero := float32(0)
	tests := []struct {
		name       string
		choice     string
		noTools    bool
		temp       *float32
		wantChoice string
		wantTemp   func(*float64) bool
	}{
		{"auto", "auto", false, nil, "auto", func(p *float64) bool { return p == nil }},
		{"none", "none", false, nil, "none", func(p *float64) bool { return p == nil }},
		{"unset", "", false, nil, "", func(p *float64) bool { return p == nil }},
		{"required without tools is dropped", "required", true, nil, "", func(p *float64) bool { return p == nil }},
		{"zero temperature is sent", "", false, &zero, "", func(p *float64) bool { return p != nil && *p < 1e-3 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, client := setup(t, llmtest.Always(llmtest.Text("ok")))
			req := masterRequest()
			req.ToolChoice, req.Temperature = tt.choice, tt.temp
			if tt.noTools {
				req.Tools = nil
			}
			if _, err := client.Chat(context.Background(), req); err != nil {
				t.Fatalf("chat: %v", err)
			}
			got := srv.Requests()[0].Request
			if got.ToolChoice != tt.wantChoice {
				t.Errorf("got tool choice %q, want %q", got.ToolChoice, tt.wantChoice)
			}
			if !tt.wantTemp(got.Temperature) {
				t.Errorf("got temperature %v", got.Temperature)
			}
		})
	}
}

func TestChatRejectsBadRequestsLocally(t *testing.T) {
	t.Parallel()
	srv, client := setup(t, nil)
	bad := masterRequest()
	bad.ToolChoice = "always"
	if _, err := client.Chat(context.Background(), bad); err == nil || !strings.Contains(err.Error(), `unknown tool choice "always"`) {
		t.Errorf("got error %v, want unknown tool choice", err)
	}
	bad = masterRequest()
	bad.Tools[0].Parameters = json.RawMessage(`{"type":`)
	if _, err := client.Chat(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("got error %v, want invalid parameters", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("got %d requests, want none", n)
	}
}

func TestChatTextAndMalformedArguments(t *testing.T) {
	t.Parallel()
	const raw = `{"text": "unterminated`
	_, client := setup(t, llmtest.Seq(llmtest.Text("just text"), llmtest.RawCall("reply", raw)))

	resp, err := client.Chat(context.Background(), masterRequest())
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if resp.Content != "just text" || len(resp.ToolCalls) != 0 || resp.Usage.Total() == 0 {
		t.Errorf("got %+v, want text only with usage", resp)
	}
	resp, err = client.Chat(context.Background(), masterRequest())
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Arguments != raw {
		t.Errorf("got tool calls %+v, want arguments %q as sent", resp.ToolCalls, raw)
	}
}

func TestRetriesRateLimitHonouringRetryAfter(t *testing.T) {
	t.Parallel()
	const retryAfter = 150 * time.Millisecond
	srv, client := setup(t, llmtest.Seq(llmtest.RateLimited(retryAfter), llmtest.Text("ok")))

	resp, err := client.Chat(context.Background(), masterRequest())
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if resp.Content != "ok" {
		t.Errorf("got %q, want ok", resp.Content)
	}
	recs := srv.Requests()
	if len(recs) != 2 || recs[0].Status != http.StatusTooManyRequests || recs[1].Status != http.StatusOK {
		t.Fatalf("got %d requests, want a 429 then a 200", len(recs))
	}
	// The backoff alone is at most 2ms: only Retry-After explains the wait.
	if gap := recs[1].Arrived.Sub(recs[0].Answered); gap < retryAfter {
		t.Errorf("retried after %v, want at least the %v the server asked for", gap, retryAfter)
	}
}

func TestRetriesServerErrorThenSucceeds(t *testing.T) {
	t.Parallel()
	srv, client := setup(t, llmtest.Seq(llmtest.ServerError(), llmtest.ServerError(), llmtest.Text("ok")))
	resp, err := client.Chat(context.Background(), masterRequest())
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if resp.Content != "ok" || len(srv.Requests()) != 3 {
		t.Errorf("got %q after %d requests, want ok after 3", resp.Content, len(srv.Requests()))
	}
}

func TestGivesUpAfterMaxRetries(t *testing.T) {
	t.Parallel()
	srv, client := setup(t, llmtest.Always(llmtest.ServerError()), func(c *llm.Config) { c.MaxRetries = 2 })

	_, err := client.Chat(context.Background(), masterRequest())
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusInternalServerError {
		t.Fatalf("got error %v, want a StatusError 500", err)
	}
	if !llm.IsRetryable(err) {
		t.Errorf("got IsRetryable false for %v, want true", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "chat gpt-4o: after 3 attempts: status 500: The server had an error") {
		t.Errorf("got error %q, want it to name the model, the attempts and the status", msg)
	}
	if n := len(srv.Requests()); n != 3 {
		t.Errorf("got %d requests, want 3 (1 + 2 retries)", n)
	}
}

func TestNoRetries(t *testing.T) {
	t.Parallel()
	srv, client := setup(t, llmtest.Always(llmtest.ServerError()), func(c *llm.Config) { c.MaxRetries = -1 })
	if _, err := client.Chat(context.Background(), masterRequest()); err == nil {
		t.Fatal("got no error, want one")
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("got %d requests, want 1", n)
	}
}

func TestDoesNotRetryClientErrors(t *testing.T) {
	t.Parallel()
	srv, client := setup(t, llmtest.Always(llmtest.Status(http.StatusBadRequest, "Invalid schema for function 'delegate'.")))

	_, err := client.Chat(context.Background(), masterRequest())
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusBadRequest || se.Message != "Invalid schema for function 'delegate'." {
		t.Fatalf("got error %v, want StatusError 400 with the server's message", err)
	}
	if llm.IsRetryable(err) {
		t.Errorf("got IsRetryable true for %v", err)
	}
	if got, want := master.ErrorMessage(err), "the LLM server rejected the request to `gpt-4o` as invalid (HTTP 400; does the model support tool calling?): Invalid schema for function 'delegate'."; got != want {
		t.Errorf("got message %q, want %q", got, want)
	}
	if code := master.ErrorCode(err); code != master.EModel {
		t.Errorf("got code %q, want %q: retrying cannot fix a 400", code, master.EModel)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("got %d requests, want 1", n)
	}
}

func TestCancellationStopsTheCall(t *testing.T) {
	t.Parallel()
	srv, client := setup(t, llmtest.Always(llmtest.Hang()))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := client.Chat(ctx, masterRequest())
		errc <- err
	}()
	srv.WaitRequests(t, 1)
	cancel()
	err := <-errc
	if !errors.Is(err, context.Canceled) || llm.IsRetryable(err) {
		t.Errorf("got error %v, want context.Canceled, not retryable", err)
	}
	if got := srv.WaitAnswered(t, 1); len(got) != 1 || got[0].Status != llmtest.StatusClientGone {
		t.Errorf("got records %+v, want one abandoned request", got)
	}
}

func TestCancellationStopsTheBackoff(t *testing.T) {
	t.Parallel()
	srv, client := setup(t, llmtest.Always(llmtest.RateLimited(time.Minute)))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := client.Chat(ctx, masterRequest())
		errc <- err
	}()
	srv.WaitAnswered(t, 1) // the client is now waiting a minute to retry
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("got error %v, want context.Canceled", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("got %d requests, want 1", n)
	}
}

func TestRetryAfterBeyondDeadlineGivesUp(t *testing.T) {
	t.Parallel()
	_, client := setup(t, llmtest.Always(llmtest.RateLimited(30*time.Second)))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := client.Chat(ctx, masterRequest())
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusTooManyRequests || se.RetryAfter != 30*time.Second {
		t.Errorf("got error %v, want the 429 asking for 30s", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v, want an immediate answer", d)
	}
}

func TestAttemptTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	srv, client := setup(t, llmtest.Seq(llmtest.Hang(), llmtest.Text("ok")), func(c *llm.Config) {
		c.Timeout = 100 * time.Millisecond
	})
	resp, err := client.Chat(context.Background(), masterRequest())
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if resp.Content != "ok" || len(srv.Requests()) != 2 {
		t.Errorf("got %q after %d requests, want ok after 2", resp.Content, len(srv.Requests()))
	}
}

func TestAttemptTimeoutGivesUp(t *testing.T) {
	t.Parallel()
	_, client := setup(t, llmtest.Always(llmtest.Hang()), func(c *llm.Config) {
		c.Timeout = 20 * time.Millisecond
		c.MaxRetries = 1
	})
	_, err := client.Chat(context.Background(), masterRequest())
	if err == nil || !llm.IsRetryable(err) || !strings.Contains(err.Error(), "no answer within 20ms") {
		t.Errorf("got error %v, want a retryable timeout", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v matching context.DeadlineExceeded; the caller's deadline did not pass", err)
	}
}

func TestAPIKeyNeverInErrorsOrLogs(t *testing.T) {
	t.Parallel()
	const key = "sk-very-secret-key-1234"
	// A careless server echoes the key in its error message.
	srv := llmtest.New(t, llmtest.Always(llmtest.Status(http.StatusTooManyRequests, "quota exceeded for key "+key)),
		llmtest.WithAPIKey(key))
	var logs syncBuffer
	client := llm.New(llm.Config{
		BaseURL: srv.URL(), APIKey: key, MaxRetries: 1, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond,
	}, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))

	_, err := client.Chat(context.Background(), masterRequest())
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusTooManyRequests {
		t.Fatalf("got error %v, want a StatusError 429", err)
	}
	if strings.Contains(se.Message, key) {
		t.Errorf("StatusError message %q contains the API key", se.Message)
	}
	if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "quota exceeded for key [REDACTED]") {
		t.Errorf("got error %q, want the key redacted", err)
	}
	if !strings.Contains(logs.String(), "retrying") || strings.Contains(logs.String(), key) {
		t.Errorf("got logs without a retry or with the API key:\n%s", logs.String())
	}
}

func TestConcurrencyBound(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	srv, client := setup(t, func(llmtest.Request) llmtest.Reply {
		<-gate
		return llmtest.Text("ok")
	}, func(c *llm.Config) { c.MaxConcurrent = 2 })

	const calls = 6
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			if _, err := client.Chat(context.Background(), masterRequest()); err != nil {
				t.Errorf("chat: %v", err)
			}
		})
	}
	srv.WaitRequests(t, 2)
	for range calls {
		gate <- struct{}{} // let one request answer
	}
	wg.Wait()
	if got := srv.MaxInFlight(); got != 2 {
		t.Errorf("got %d calls in flight at once, want 2", got)
	}
	if n := len(srv.Requests()); n != calls {
		t.Errorf("got %d requests, want %d", n, calls)
	}
}

func TestModels(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, nil, llmtest.WithModels("a", "b"))
	client := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: srv.APIKey()}, nil)
	got, err := client.Models(context.Background())
	if err != nil {
		t.Fatalf("models: %v", err)
	}
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("got %v, want [a b]", got)
	}

	bad := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: "wrong"}, nil)
	_, err = bad.Models(context.Background())
	var se *llm.StatusError
	if !errors.As(err, &se) || se.Status != http.StatusUnauthorized || !strings.HasPrefix(err.Error(), "list models: status 401") {
		t.Errorf("got error %v, want list models: status 401", err)
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestConfigHidesAPIKey(t *testing.T) {
	t.Parallel()
	const key = "sk-do-not-print-me"
	cfg := llm.Config{BaseURL: "http://x/v1", APIKey: key, HTTPClient: http.DefaultClient}
	var logs syncBuffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "llm", cfg)
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), logs.String()} {
		if strings.Contains(s, key) || !strings.Contains(s, "http://x/v1") {
			t.Errorf("got %s, want the base URL and no key", s)
		}
	}
}
