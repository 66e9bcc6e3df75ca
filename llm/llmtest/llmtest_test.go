package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/callonbot/callon/llm/llmtest"
)

// setup starts a fake with script and a real go-openai client for it.
func setup(t *testing.T, script llmtest.Script, opts ...llmtest.Option) (*llmtest.Server, *openai.Client) {
	t.Helper()
	srv := llmtest.New(t, script, opts...)
	cfg := openai.DefaultConfig(srv.APIKey())
	cfg.BaseURL = srv.URL()
	return srv, openai.NewClientWithConfig(cfg)
}

var delegateSchema = json.RawMessage(`{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"object","properties":{"role":{"type":"string","enum":["researcher","writer"]},"instruction":{"type":"string"}}}}}}`)

func chatRequest() openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessage{
			{Role: "system", Content: "You are the master."},
			{Role: "user", Content: "plan a trip"},
		},
		Tools: []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: "delegate", Description: "hand work to the team", Parameters: delegateSchema,
		}}},
		ToolChoice: "required",
	}
}

func TestToolCall(t *testing.T) {
	t.Parallel()
	var seen llmtest.Request
	srv, client := setup(t, func(req llmtest.Request) llmtest.Reply {
		seen = req
		return llmtest.Call("delegate", map[string]any{"tasks": []map[string]any{{"role": "researcher", "instruction": "look"}}})
	})

	resp, err := client.CreateChatCompletion(context.Background(), chatRequest())
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	calls := resp.Choices[0].Message.ToolCalls
	if len(calls) != 1 || calls[0].Function.Name != "delegate" || calls[0].ID == "" {
		t.Fatalf("got tool calls %+v, want one delegate call with an id", calls)
	}
	if got, want := calls[0].Function.Arguments, `{"tasks":[{"instruction":"look","role":"researcher"}]}`; got != want {
		t.Errorf("got arguments %s, want %s", got, want)
	}
	if resp.Choices[0].FinishReason != openai.FinishReasonToolCalls {
		t.Errorf("got finish reason %q, want tool_calls", resp.Choices[0].FinishReason)
	}
	if resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("got usage %+v, want positive counts that add up", resp.Usage)
	}

	if seen.System() != "You are the master." || seen.LastUser() != "plan a trip" || seen.ToolChoice != "required" {
		t.Errorf("got system %q, last user %q, tool choice %q", seen.System(), seen.LastUser(), seen.ToolChoice)
	}
	if !seen.HasTool("delegate") || seen.HasTool("reply") {
		t.Errorf("got tools %v, want [delegate]", seen.ToolNames())
	}
	if got := seen.ToolEnum("delegate", "tasks", "role"); !slices.Equal(got, []string{"researcher", "writer"}) {
		t.Errorf("got role enum %v, want [researcher writer]", got)
	}
	recs := srv.Requests()
	if len(recs) != 1 || recs[0].Status != http.StatusOK || recs[0].Answered.Before(recs[0].Arrived) {
		t.Errorf("got records %+v, want one answered 200", recs)
	}
}

func TestTextAndUsage(t *testing.T) {
	t.Parallel()
	_, client := setup(t, llmtest.Always(llmtest.Text("hello there").WithUsage(11, 7)))

	resp, err := client.CreateChatCompletion(context.Background(), chatRequest())
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if got := resp.Choices[0].Message; got.Content != "hello there" || len(got.ToolCalls) != 0 {
		t.Errorf("got message %+v, want text only", got)
	}
	if resp.Usage.PromptTokens != 11 || resp.Usage.CompletionTokens != 7 || resp.Usage.TotalTokens != 18 {
		t.Errorf("got usage %+v, want 11+7", resp.Usage)
	}
}

func TestMalformedArgumentsPassThrough(t *testing.T) {
	t.Parallel()
	const raw = `{"tasks": [ {"role": "researcher",`
	_, client := setup(t, llmtest.Always(llmtest.RawCall("delegate", raw)))

	resp, err := client.CreateChatCompletion(context.Background(), chatRequest())
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if got := resp.Choices[0].Message.ToolCalls[0].Function.Arguments; got != raw {
		t.Errorf("got arguments %q, want %q", got, raw)
	}
}

// collect reads a stream to the end, reassembling content and tool calls
// from their deltas.
func collect(t *testing.T, stream *openai.ChatCompletionStream) (string, []openai.ToolCall, *openai.Usage, openai.FinishReason) {
	t.Helper()
	var (
		content strings.Builder
		calls   []openai.ToolCall
		usage   *openai.Usage
		finish  openai.FinishReason
	)
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return content.String(), calls, usage, finish
		}
		if err != nil {
			t.Fatalf("recv: %v", err)
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		for _, ch := range chunk.Choices {
			content.WriteString(ch.Delta.Content)
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
			for _, d := range ch.Delta.ToolCalls {
				i := *d.Index
				for len(calls) <= i {
					calls = append(calls, openai.ToolCall{})
				}
				if d.ID != "" {
					calls[i].ID = d.ID
				}
				calls[i].Function.Name += d.Function.Name
				calls[i].Function.Arguments += d.Function.Arguments
			}
		}
	}
}

func TestStreamText(t *testing.T) {
	t.Parallel()
	const text = "A longer answer, with ünïcode, streamed in pieces."
	_, client := setup(t, llmtest.Always(llmtest.Text(text).WithUsage(5, 9)))

	req := chatRequest()
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	stream, err := client.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	defer stream.Close()
	content, calls, usage, finish := collect(t, stream)
	if content != text || len(calls) != 0 || finish != openai.FinishReasonStop {
		t.Errorf("got %q, %d calls, finish %q; want %q, none, stop", content, len(calls), finish, text)
	}
	if usage == nil || usage.PromptTokens != 5 || usage.CompletionTokens != 9 {
		t.Errorf("got usage %+v, want 5+9", usage)
	}
}

func TestStreamToolCalls(t *testing.T) {
	t.Parallel()
	_, client := setup(t, llmtest.Always(llmtest.Calls(
		llmtest.Call("progress", map[string]any{"percent": 50, "note": "halfway"}),
		llmtest.Call("report", map[string]any{"status": "done", "result": "a fairly long result text"}),
	)))

	stream, err := client.CreateChatCompletionStream(context.Background(), chatRequest())
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	defer stream.Close()
	_, calls, usage, finish := collect(t, stream)
	if len(calls) != 2 || finish != openai.FinishReasonToolCalls {
		t.Fatalf("got %d calls, finish %q; want 2, tool_calls", len(calls), finish)
	}
	if calls[0].Function.Name != "progress" || calls[0].Function.Arguments != `{"note":"halfway","percent":50}` {
		t.Errorf("got first call %+v", calls[0])
	}
	if calls[1].Function.Name != "report" || calls[1].Function.Arguments != `{"result":"a fairly long result text","status":"done"}` {
		t.Errorf("got second call %+v", calls[1])
	}
	if calls[0].ID == "" || calls[0].ID == calls[1].ID {
		t.Errorf("got ids %q and %q, want distinct", calls[0].ID, calls[1].ID)
	}
	if usage != nil {
		t.Errorf("got usage %+v without include_usage, want none", usage)
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		reply  llmtest.Reply
		status int
	}{
		{"rate limited", llmtest.RateLimited(1500 * time.Millisecond), http.StatusTooManyRequests},
		{"server error", llmtest.ServerError(), http.StatusInternalServerError},
		{"bad request", llmtest.Status(http.StatusBadRequest, "no such model"), http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, client := setup(t, llmtest.Always(tt.reply))
			_, err := client.CreateChatCompletion(context.Background(), chatRequest())
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != tt.status || apiErr.Message == "" {
				t.Fatalf("got error %v, want an APIError with status %d", err, tt.status)
			}
			if got := srv.Requests()[0].Status; got != tt.status {
				t.Errorf("got recorded status %d, want %d", got, tt.status)
			}
		})
	}
}

func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Always(llmtest.RateLimited(1500*time.Millisecond)))
	req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/chat/completions", strings.NewReader(`{"model":"m","messages":[]}`))
	req.Header.Set("Authorization", "Bearer "+srv.APIKey())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("Retry-After"); got != "2" {
		t.Errorf("got Retry-After %q, want 2", got)
	}
	if got := resp.Header.Get("retry-after-ms"); got != "1500" {
		t.Errorf("got retry-after-ms %q, want 1500", got)
	}
}

func TestUnauthorized(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Always(llmtest.Text("never")))
	cfg := openai.DefaultConfig("wrong-key")
	cfg.BaseURL = srv.URL()
	_, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(context.Background(), chatRequest())
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusUnauthorized {
		t.Fatalf("got error %v, want 401", err)
	}
}

func TestModels(t *testing.T) {
	t.Parallel()
	_, client := setup(t, nil, llmtest.WithModels("master-model", "worker-model"))
	list, err := client.ListModels(context.Background())
	if err != nil {
		t.Fatalf("list models: %v", err)
	}
	var ids []string
	for _, m := range list.Models {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{"master-model", "worker-model"}) {
		t.Errorf("got models %v, want [master-model worker-model]", ids)
	}
}

func TestHangStopsWhenClientGoesAway(t *testing.T) {
	t.Parallel()
	srv, client := setup(t, llmtest.Always(llmtest.Hang()))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := client.CreateChatCompletion(ctx, chatRequest())
		errc <- err
	}()
	srv.WaitRequests(t, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("got error %v, want context.Canceled", err)
	}
	if got := srv.WaitAnswered(t, 1)[0].Status; got != llmtest.StatusClientGone {
		t.Errorf("got status %d, want %d", got, llmtest.StatusClientGone)
	}
}

func TestSwitchAndSeq(t *testing.T) {
	t.Parallel()
	_, client := setup(t, llmtest.Switch(
		llmtest.Match("You are the researcher", llmtest.Seq(llmtest.Text("r1"), llmtest.Text("r2"))),
		llmtest.Match("", llmtest.Always(llmtest.Text("master"))),
	))
	ask := func(system string) string {
		t.Helper()
		req := chatRequest()
		req.Messages[0].Content = system
		resp, err := client.CreateChatCompletion(context.Background(), req)
		if err != nil {
			t.Fatalf("chat: %v", err)
		}
		return resp.Choices[0].Message.Content
	}
	got := []string{
		ask("You are the researcher of a team working on: a trip"),
		ask("You are the master."),
		ask("You are the researcher of a team working on: a trip"),
	}
	if want := []string{"r1", "master", "r2"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestSeqExhausted checks that a request beyond the script fails the test.
func TestSeqExhausted(t *testing.T) {
	t.Parallel()
	rec := &recordingTB{TB: t}
	srv := llmtest.New(rec, llmtest.Seq(llmtest.Text("only")))
	cfg := openai.DefaultConfig(srv.APIKey())
	cfg.BaseURL = srv.URL()
	client := openai.NewClientWithConfig(cfg)
	if _, err := client.CreateChatCompletion(context.Background(), chatRequest()); err != nil {
		t.Fatalf("first chat: %v", err)
	}
	_, err := client.CreateChatCompletion(context.Background(), chatRequest())
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusInternalServerError {
		t.Errorf("got error %v, want 500", err)
	}
	if msgs := rec.errors(); len(msgs) != 1 || !strings.Contains(msgs[0], "Seq has 1 replies") {
		t.Errorf("got test errors %q, want one about the exhausted Seq", msgs)
	}
}

func TestOverlapping(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	srv, client := setup(t, func(req llmtest.Request) llmtest.Reply {
		<-gate
		return llmtest.Text("ok")
	})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			if _, err := client.CreateChatCompletion(context.Background(), chatRequest()); err != nil {
				t.Errorf("chat: %v", err)
			}
		})
	}
	srv.WaitRequests(t, 2)
	close(gate)
	wg.Wait()
	recs := srv.Requests()
	if !llmtest.Overlapping(recs...) {
		t.Errorf("got records %+v, want overlapping", recs)
	}
	if srv.MaxInFlight() != 2 {
		t.Errorf("got max in flight %d, want 2", srv.MaxInFlight())
	}

	// Sequential calls do not overlap.
	for range 2 {
		if _, err := client.CreateChatCompletion(context.Background(), chatRequest()); err != nil {
			t.Fatalf("chat: %v", err)
		}
	}
	recs = srv.Requests()
	if llmtest.Overlapping(recs[2], recs[3]) {
		t.Errorf("got sequential records %+v overlapping", recs[2:])
	}
}

// recordingTB captures Errorf calls instead of failing the test.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	msgs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

func TestDelay(t *testing.T) {
	t.Parallel()
	const d = 30 * time.Millisecond
	srv, client := setup(t, llmtest.SeqFunc(
		func(req llmtest.Request) llmtest.Reply { return llmtest.Delay(d, llmtest.Text("late "+req.LastUser())) },
		func(llmtest.Request) llmtest.Reply { return llmtest.Delay(time.Minute, llmtest.Text("never")) },
	))
	resp, err := client.CreateChatCompletion(context.Background(), chatRequest())
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if got := resp.Choices[0].Message.Content; got != "late plan a trip" {
		t.Errorf("got %q, want %q", got, "late plan a trip")
	}
	if rec := srv.Requests()[0]; rec.Answered.Sub(rec.Arrived) < d {
		t.Errorf("answered after %v, want at least %v", rec.Answered.Sub(rec.Arrived), d)
	}

	// A cancelled client ends the delay without an answer.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := client.CreateChatCompletion(ctx, chatRequest())
		errc <- err
	}()
	srv.WaitRequests(t, 2)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("got error %v, want context.Canceled", err)
	}
	if got := srv.WaitAnswered(t, 2)[1].Status; got != llmtest.StatusClientGone {
		t.Errorf("got status %d, want %d", got, llmtest.StatusClientGone)
	}
}
