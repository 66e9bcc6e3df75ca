package llmfake

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Request is a chat completion request as the server parsed it.
type Request struct {
	Model    string
	Messages []Message
	Tools    []Tool
	// ToolChoice is "" when the client sent none, "auto", "none" or
	// "required" when it sent a string, and the function's name when it
	// forced one with {"type":"function","function":{"name":…}}.
	ToolChoice  string
	Temperature *float64
	// MaxTokens is max_completion_tokens, or max_tokens when that is absent.
	MaxTokens int
	Stream    bool
	// IncludeUsage reports stream_options.include_usage.
	IncludeUsage bool
	// Body is the request body exactly as received.
	Body json.RawMessage
}

// Message is one chat message of a request.
type Message struct {
	Role string
	// Content is the message text; the text parts of a multi-part content
	// are joined with newlines.
	Content string
	// Images are the URLs of its image_url parts (data: URLs included),
	// in order.
	Images     []string
	ToolCalls  []ToolCall
	ToolCallID string
}

// Tool is a function tool offered in a request.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolCall is a call of a tool: in an assistant message of a request, or in
// a reply. Arguments is JSON text, possibly malformed.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// System returns the request's system prompt: the system (or developer)
// messages joined with newlines.
func (r Request) System() string {
	var parts []string
	for _, m := range r.Messages {
		if m.Role == "system" || m.Role == "developer" {
			parts = append(parts, m.Content)
		}
	}
	return strings.Join(parts, "\n")
}

// LastUser returns the content of the last user message, or "".
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// ToolResults returns the tool messages that follow the last assistant
// message: the results the model is being shown for the first time.
func (r Request) ToolResults() []Message {
	var out []Message
	for i := len(r.Messages) - 1; i >= 0 && r.Messages[i].Role == "tool"; i-- {
		out = append([]Message{r.Messages[i]}, out...)
	}
	return out
}

// HasTool reports whether the request offers a tool with that name.
func (r Request) HasTool(name string) bool {
	_, ok := r.Tool(name)
	return ok
}

// Tool returns the offered tool with that name.
func (r Request) Tool(name string) (Tool, bool) {
	for _, t := range r.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// ToolNames returns the names of the offered tools, in order.
func (r Request) ToolNames() []string {
	names := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		names[i] = t.Name
	}
	return names
}

// ToolEnum returns the enum of a property in a tool's parameter schema.
// The path names properties from the top; arrays are entered through their
// items, so ToolEnum("delegate", "tasks", "role") reads
// properties.tasks.items.properties.role.enum. It returns nil when the tool,
// the property or the enum is missing.
func (r Request) ToolEnum(tool string, path ...string) []string {
	t, ok := r.Tool(tool)
	if !ok {
		return nil
	}
	var schema map[string]any
	if json.Unmarshal(t.Parameters, &schema) != nil {
		return nil
	}
	for _, name := range path {
		if items, ok := schema["items"].(map[string]any); ok {
			schema = items
		}
		props, _ := schema["properties"].(map[string]any)
		schema, _ = props[name].(map[string]any)
		if schema == nil {
			return nil
		}
	}
	if items, ok := schema["items"].(map[string]any); ok && schema["enum"] == nil {
		schema = items
	}
	values, _ := schema["enum"].([]any)
	out := make([]string, 0, len(values))
	for _, v := range values {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

// wireRequest is the JSON body of POST /v1/chat/completions.
type wireRequest struct {
	Model    string        `json:"model"`
	Messages []wireMessage `json:"messages"`
	Tools    []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	Temperature         *float64        `json:"temperature"`
	MaxTokens           int             `json:"max_tokens"`
	MaxCompletionTokens int             `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []wireToolCall  `json:"tool_calls,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// parseRequest decodes a chat completion request body.
func parseRequest(body []byte) (Request, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return Request{}, fmt.Errorf("decode request: %w", err)
	}
	req := Request{
		Model:        w.Model,
		Temperature:  w.Temperature,
		MaxTokens:    w.MaxCompletionTokens,
		Stream:       w.Stream,
		IncludeUsage: w.StreamOptions != nil && w.StreamOptions.IncludeUsage,
		Body:         json.RawMessage(body),
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = w.MaxTokens
	}
	for i, m := range w.Messages {
		content, images, err := parseContent(m.Content)
		if err != nil {
			return Request{}, fmt.Errorf("message %d: %w", i, err)
		}
		msg := Message{Role: m.Role, Content: content, Images: images, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	for i, t := range w.Tools {
		if t.Type != "function" {
			return Request{}, fmt.Errorf("tool %d: type %q, want function", i, t.Type)
		}
		req.Tools = append(req.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	choice, err := parseToolChoice(w.ToolChoice)
	if err != nil {
		return Request{}, err
	}
	req.ToolChoice = choice
	return req, nil
}

// parseContent accepts a string, null, or an array of content parts: it
// returns the text, and the URLs of the image parts. An image part
// without a URL is refused, as OpenAI does.
func parseContent(raw json.RawMessage) (string, []string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil, nil
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, fmt.Errorf("content is neither a string nor parts: %s", raw)
	}
	var texts, images []string
	for i, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "image_url":
			if p.ImageURL == nil || p.ImageURL.URL == "" {
				return "", nil, fmt.Errorf("content part %d: image_url without a url", i)
			}
			images = append(images, p.ImageURL.URL)
		}
	}
	return strings.Join(texts, "\n"), images, nil
}

func parseToolChoice(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var forced struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(raw, &forced); err != nil || forced.Function.Name == "" {
		return "", fmt.Errorf("tool_choice is neither a string nor a function: %s", raw)
	}
	return forced.Function.Name, nil
}
