package master

import (
	"cmp"
	"context"
	"encoding/json"
)

// LLM is a chat-completions model that can call tools. The llm package
// implements it over any OpenAI-compatible server.
type LLM interface {
	Chat(ctx context.Context, req ChatRequest) (ChatResponse, error)
}

// Chat message roles.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ChatRequest is one call to a model.
type ChatRequest struct {
	Model    string
	Messages []Message
	Tools    []Tool
	// ToolChoice is "" (the model decides), "auto", "none" or "required".
	ToolChoice  string
	Temperature *float32
	// MaxTokens bounds the answer; zero leaves it to the server.
	MaxTokens int
}

// Message is one chat message.
type Message struct {
	Role       string
	Content    string
	Images     []Image    // user messages: pictures for a model that sees images
	ToolCalls  []ToolCall // assistant messages that called tools
	ToolCallID string     // tool messages: the call they answer
}

// Image is a picture given to a model with a message.
type Image struct {
	Name        string
	ContentType string // image/png, image/jpeg, image/gif or image/webp
	Data        []byte
}

// Tool is a function the model may call; Parameters is a JSON schema.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolCall is the model's request to call a tool. Arguments is the raw JSON
// text the model produced; it may be malformed.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ChatResponse is a model's answer: text, tool calls, or both.
type ChatResponse struct {
	Content   string
	ToolCalls []ToolCall
	Usage     Usage
	// Dialect is how the tool calls were written: "" for the server's
	// tool_calls, else the name of the form they were decoded from in
	// the text (llm's tool dialects).
	Dialect string
}

// Usage counts the tokens of one or more calls to one model.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	// Model is the model the tokens were used on, for pricing; "" when
	// not known. A charge is one model's: the master's calls, or one
	// task's.
	Model string
}

// Add returns the sum of two usages, of u's model (v's when u has none).
func (u Usage) Add(v Usage) Usage {
	return Usage{u.PromptTokens + v.PromptTokens, u.CompletionTokens + v.CompletionTokens, cmp.Or(u.Model, v.Model)}
}

// Total is prompt plus completion tokens.
func (u Usage) Total() int64 { return u.PromptTokens + u.CompletionTokens }
