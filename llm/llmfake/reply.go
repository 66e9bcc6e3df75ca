package llmfake

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// Reply is what the server answers to one request: an assistant message
// (text, tool calls or both) or a fault. Build it with Text, Call, RawCall,
// Calls, RateLimited, ServerError, Status, Delay, Hang or Unexpected; the
// zero Reply is an empty assistant message.
type Reply struct {
	content   string
	toolCalls []ToolCall
	usage     *Usage

	status  int // 0 answers 200
	errType string
	message string // error message of a fault
	header  http.Header

	delay      time.Duration
	hang       bool
	unexpected string // non-empty: told to OnUnexpected
}

// Usage is the token count reported in an answer.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
}

// Text answers with an assistant message holding only text.
func Text(s string) Reply {
	return Reply{content: s}
}

// Call answers with one call of the named tool; args is marshalled to JSON
// (a string or json.RawMessage is used as is). It panics if args cannot be
// marshalled, which is a mistake in the test.
func Call(name string, args any) Reply {
	var raw string
	switch a := args.(type) {
	case string:
		raw = a
	case json.RawMessage:
		raw = string(a)
	default:
		b, err := json.Marshal(args)
		if err != nil {
			panic(fmt.Sprintf("llmfake.Call(%q): marshal arguments: %v", name, err))
		}
		raw = string(b)
	}
	return Reply{toolCalls: []ToolCall{{Name: name, Arguments: raw}}}
}

// RawCall answers with one call of the named tool whose arguments are the
// given text, sent as is: use it for malformed arguments.
func RawCall(name, rawArgs string) Reply {
	return Reply{toolCalls: []ToolCall{{Name: name, Arguments: rawArgs}}}
}

// Calls answers with one assistant message holding the text and the tool
// calls of all the given replies, in order: parallel tool calls, or text
// beside a call.
func Calls(replies ...Reply) Reply {
	var out Reply
	for _, r := range replies {
		if out.content != "" && r.content != "" {
			out.content += "\n"
		}
		out.content += r.content
		out.toolCalls = append(out.toolCalls, r.toolCalls...)
		if r.usage != nil {
			out.usage = r.usage
		}
	}
	return out
}

// WithUsage returns r reporting the given token counts instead of the
// estimate (input and output characters divided by four).
func (r Reply) WithUsage(prompt, completion int64) Reply {
	r.usage = &Usage{PromptTokens: prompt, CompletionTokens: completion}
	return r
}

// WithID returns r with the ID of its tool calls set, in order, instead of
// the server's generated call_N identifiers.
func (r Reply) WithID(ids ...string) Reply {
	r.toolCalls = append([]ToolCall(nil), r.toolCalls...)
	for i := range min(len(ids), len(r.toolCalls)) {
		r.toolCalls[i].ID = ids[i]
	}
	return r
}

// RateLimited answers 429 with an OpenAI-style rate limit error. A positive
// retryAfter is sent both as Retry-After (whole seconds, rounded up) and as
// OpenAI's retry-after-ms, so a client that reads retry-after-ms can be
// tested with waits of a few milliseconds.
func RateLimited(retryAfter time.Duration) Reply {
	r := Status(http.StatusTooManyRequests, "Rate limit reached for requests (llmfake).")
	r.errType = "requests"
	if retryAfter > 0 {
		r.header = http.Header{}
		r.header.Set("Retry-After", strconv.Itoa(int(math.Ceil(retryAfter.Seconds()))))
		r.header.Set("Retry-After-Ms", strconv.FormatInt(retryAfter.Milliseconds(), 10))
	}
	return r
}

// ServerError answers 500 with an OpenAI-style server error.
func ServerError() Reply {
	r := Status(http.StatusInternalServerError, "The server had an error while processing your request (llmfake).")
	r.errType = "server_error"
	return r
}

// Status answers the given HTTP status with an OpenAI-style JSON error
// carrying message.
func Status(code int, message string) Reply {
	return Reply{status: code, errType: "invalid_request_error", message: message}
}

// WithHeader returns r with an extra response header.
func (r Reply) WithHeader(key, value string) Reply {
	r.header = r.header.Clone()
	if r.header == nil {
		r.header = http.Header{}
	}
	r.header.Set(key, value)
	return r
}

// Delay answers r after waiting d. The wait ends early, without an answer,
// when the client goes away (its context is cancelled) or the server closes.
func Delay(d time.Duration, r Reply) Reply {
	r.delay += d
	return r
}

// Hang never answers: the request blocks until the client goes away or the
// server closes. Use it to test cancellation and timeouts.
func Hang() Reply {
	return Reply{hang: true}
}

// Unexpected answers 500 and tells the server's OnUnexpected (llmtest
// fails the test with it). Scripts use it for requests they did not expect;
// Seq and Switch return it when they run out of answers or routes.
func Unexpected(format string, args ...any) Reply {
	msg := fmt.Sprintf(format, args...)
	return Reply{status: http.StatusInternalServerError, errType: "llmfake_unexpected", message: "llmfake: " + msg, unexpected: msg}
}

// isFault reports whether the reply is an HTTP error rather than a message.
func (r Reply) isFault() bool {
	return r.status != 0 && r.status != http.StatusOK
}
