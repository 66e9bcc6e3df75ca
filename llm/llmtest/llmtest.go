package llmtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/callonbot/callon/llm/llmfake"
)

// The script vocabulary of llmfake, for tests.
type (
	// Script decides the reply to each request (llmfake.Script).
	Script = llmfake.Script
	// Reply is one answer or fault (llmfake.Reply).
	Reply = llmfake.Reply
	// Request is a request as the server parsed it (llmfake.Request).
	Request = llmfake.Request
	// Message is one chat message of a request (llmfake.Message).
	Message = llmfake.Message
	// Tool is a tool offered in a request (llmfake.Tool).
	Tool = llmfake.Tool
	// ToolCall is a call of a tool (llmfake.ToolCall).
	ToolCall = llmfake.ToolCall
	// Usage is the token count of an answer (llmfake.Usage).
	Usage = llmfake.Usage
	// Route is a branch of a Switch (llmfake.Route).
	Route = llmfake.Route
	// Record is one request the server received (llmfake.Record).
	Record = llmfake.Record
	// Option configures a Server (llmfake.Option).
	Option = llmfake.Option
)

// StatusClientGone is llmfake.StatusClientGone.
const StatusClientGone = llmfake.StatusClientGone

// waitTimeout bounds WaitRequests and WaitAnswered.
const waitTimeout = 10 * time.Second

// Server is an llmfake.Server that belongs to a test.
type Server struct {
	*llmfake.Server
}

// New starts a server answering chat completions with script; it is
// closed when the test ends, and a request it did not expect fails the
// test. A nil script treats every chat request as Unexpected.
func New(tb testing.TB, script Script, opts ...Option) *Server {
	tb.Helper()
	opts = append([]Option{llmfake.OnUnexpected(func(msg string) { tb.Errorf("%s", msg) })}, opts...)
	s, err := llmfake.Start(script, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return &Server{s}
}

// WaitRequests waits until at least n chat completion requests have
// arrived and returns the records so far. It fails the test after 10s.
func (s *Server) WaitRequests(tb testing.TB, n int) []Record {
	tb.Helper()
	return s.waitUntil(tb, fmt.Sprintf("%d requests to arrive", n), func(recs []Record) bool { return len(recs) >= n })
}

// WaitAnswered waits until at least n chat completion requests have been
// answered (or abandoned by their client) and returns the records so far.
// It fails the test after 10s.
func (s *Server) WaitAnswered(tb testing.TB, n int) []Record {
	tb.Helper()
	return s.waitUntil(tb, fmt.Sprintf("%d requests to be answered", n), func(recs []Record) bool { return llmfake.Answered(recs) >= n })
}

func (s *Server) waitUntil(tb testing.TB, what string, done func([]Record) bool) []Record {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	recs, err := s.Wait(ctx, done)
	if err != nil {
		tb.Fatalf("llmtest: waited %v for %s; %d arrived", waitTimeout, what, len(recs))
	}
	return recs
}

// WithModels is llmfake.WithModels.
func WithModels(names ...string) Option { return llmfake.WithModels(names...) }

// WithAPIKey is llmfake.WithAPIKey.
func WithAPIKey(key string) Option { return llmfake.WithAPIKey(key) }

// Overlapping is llmfake.Overlapping.
func Overlapping(records ...Record) bool { return llmfake.Overlapping(records...) }

// Always is llmfake.Always.
func Always(r Reply) Script { return llmfake.Always(r) }

// Seq is llmfake.Seq.
func Seq(replies ...Reply) Script { return llmfake.Seq(replies...) }

// SeqFunc is llmfake.SeqFunc.
func SeqFunc(steps ...Script) Script { return llmfake.SeqFunc(steps...) }

// Match is llmfake.Match.
func Match(substr string, s Script) Route { return llmfake.Match(substr, s) }

// MatchFunc is llmfake.MatchFunc.
func MatchFunc(pred func(Request) bool, s Script) Route { return llmfake.MatchFunc(pred, s) }

// Switch is llmfake.Switch.
func Switch(routes ...Route) Script { return llmfake.Switch(routes...) }

// Text is llmfake.Text.
func Text(s string) Reply { return llmfake.Text(s) }

// Call is llmfake.Call.
func Call(name string, args any) Reply { return llmfake.Call(name, args) }

// RawCall is llmfake.RawCall.
func RawCall(name, rawArgs string) Reply { return llmfake.RawCall(name, rawArgs) }

// Calls is llmfake.Calls.
func Calls(replies ...Reply) Reply { return llmfake.Calls(replies...) }

// RateLimited is llmfake.RateLimited.
func RateLimited(retryAfter time.Duration) Reply { return llmfake.RateLimited(retryAfter) }

// ServerError is llmfake.ServerError.
func ServerError() Reply { return llmfake.ServerError() }

// Status is llmfake.Status.
func Status(code int, message string) Reply { return llmfake.Status(code, message) }

// Delay is llmfake.Delay.
func Delay(d time.Duration, r Reply) Reply { return llmfake.Delay(d, r) }

// Hang is llmfake.Hang.
func Hang() Reply { return llmfake.Hang() }

// Unexpected is llmfake.Unexpected: it fails the test.
func Unexpected(format string, args ...any) Reply { return llmfake.Unexpected(format, args...) }
