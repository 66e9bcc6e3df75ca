package llmfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// The JSON shapes of answers, as OpenAI sends them.
type (
	wireCompletion struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []wireChoice `json:"choices"`
		Usage   *wireUsage   `json:"usage,omitempty"`
	}
	wireChoice struct {
		Index        int         `json:"index"`
		Message      *wireAnswer `json:"message,omitempty"`
		Delta        *wireAnswer `json:"delta,omitempty"`
		FinishReason *string     `json:"finish_reason"`
	}
	wireAnswer struct {
		Role      string         `json:"role,omitempty"`
		Content   *string        `json:"content,omitempty"`
		ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
	}
	wireUsage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
		TotalTokens      int64 `json:"total_tokens"`
	}
)

// chunkRunes is how many characters each streamed delta carries.
const chunkRunes = 8

// answer is a reply made concrete for one request: call IDs and usage set.
type answer struct {
	id        string
	content   string
	toolCalls []ToolCall
	usage     wireUsage
}

func (s *Server) concrete(req Request, r Reply) answer {
	a := answer{id: s.newID("chatcmpl-llmfake-"), content: r.content}
	for _, c := range r.toolCalls {
		if c.ID == "" {
			c.ID = s.newID("call_")
		}
		a.toolCalls = append(a.toolCalls, c)
	}
	u := estimate(req, r)
	if r.usage != nil {
		u = *r.usage
	}
	a.usage = wireUsage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens}
	return a
}

func (a answer) finishReason() *string {
	reason := "stop"
	if len(a.toolCalls) > 0 {
		reason = "tool_calls"
	}
	return &reason
}

// completion is the non-streaming answer.
func (s *Server) completion(req Request, r Reply) wireCompletion {
	a := s.concrete(req, r)
	msg := &wireAnswer{Role: "assistant"}
	if a.content != "" || len(a.toolCalls) == 0 {
		msg.Content = &a.content
	}
	for _, c := range a.toolCalls {
		wc := wireToolCall{ID: c.ID, Type: "function"}
		wc.Function.Name, wc.Function.Arguments = c.Name, c.Arguments
		msg.ToolCalls = append(msg.ToolCalls, wc)
	}
	return wireCompletion{
		ID: a.id, Object: "chat.completion", Created: time.Now().Unix(), Model: req.Model,
		Choices: []wireChoice{{Message: msg, FinishReason: a.finishReason()}},
		Usage:   &a.usage,
	}
}

// stream answers as server-sent events: a role delta, content deltas, for
// each tool call a delta with its id and name and then argument deltas, a
// final delta with the finish reason, a usage chunk when asked for, and
// [DONE].
func (s *Server) stream(w http.ResponseWriter, i int, req Request, r Reply) {
	a := s.concrete(req, r)
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	created := time.Now().Unix()
	send := func(choices []wireChoice, usage *wireUsage) {
		b, err := json.Marshal(wireCompletion{
			ID: a.id, Object: "chat.completion.chunk", Created: created, Model: req.Model,
			Choices: choices, Usage: usage,
		})
		if err != nil {
			panic(err) // our own types always marshal
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	delta := func(d wireAnswer) { send([]wireChoice{{Delta: &d}}, nil) }

	empty := ""
	delta(wireAnswer{Role: "assistant", Content: &empty})
	for _, piece := range pieces(a.content) {
		delta(wireAnswer{Content: &piece})
	}
	for n, c := range a.toolCalls {
		first := wireToolCall{Index: &n, ID: c.ID, Type: "function"}
		first.Function.Name = c.Name
		delta(wireAnswer{ToolCalls: []wireToolCall{first}})
		for _, piece := range pieces(c.Arguments) {
			more := wireToolCall{Index: &n}
			more.Function.Arguments = piece
			delta(wireAnswer{ToolCalls: []wireToolCall{more}})
		}
	}
	send([]wireChoice{{Delta: &wireAnswer{}, FinishReason: a.finishReason()}}, nil)
	if req.IncludeUsage {
		send([]wireChoice{}, &a.usage)
	}
	s.answer(i, http.StatusOK)
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// pieces splits s into chunks of chunkRunes characters.
func pieces(s string) []string {
	var out []string
	r := []rune(s)
	for len(r) > 0 {
		n := min(chunkRunes, len(r))
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	return out
}

// estimate is the default usage: characters in and out divided by four,
// at least one token each.
func estimate(req Request, r Reply) Usage {
	in := 0
	for _, m := range req.Messages {
		in += len(m.Content)
		for _, c := range m.ToolCalls {
			in += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		in += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	out := len(r.content)
	for _, c := range r.toolCalls {
		out += len(c.Name) + len(c.Arguments)
	}
	return Usage{PromptTokens: int64(max(1, in/4)), CompletionTokens: int64(max(1, out/4))}
}
