package llm

import (
	"context"
	"fmt"
	"strings"

	"github.com/callonbot/callon/master"
)

// ToolProbe is what one probe call found out about a model's tool calls.
type ToolProbe struct {
	// CallsTools: the model called the probe's tool with valid arguments.
	CallsTools bool
	// Dialect is how it wrote the call: "native" (tool_calls) or the text
	// form it was decoded from (FormTags…); "" when it made none.
	Dialect string
	// Detail says, for people, what the model did when it made no call,
	// or what to change ("" when nothing).
	Detail string
}

// probeTool is the one tool a probe offers.
var probeTool = master.Tool{
	Name:        "record_word",
	Description: "Record one word.",
	Parameters: []byte(`{"type":"object","additionalProperties":false,"required":["word"],` +
		`"properties":{"word":{"type":"string","description":"The word to record."}}}`),
}

// ProbeTools asks a model, through m (a Client or a Router, so the
// provider's tool dialect applies), to call a tool: one call of a few
// dozen tokens, with tool_choice required as callon's master uses. It
// answers whether the model calls tools at all, and in which dialect:
// callon doctor --probe-models runs it for the configured models. err is
// the call's failure (the server refused the request, for one).
func ProbeTools(ctx context.Context, m master.LLM, model string) (ToolProbe, error) {
	resp, err := m.Chat(ctx, master.ChatRequest{
		Model: model,
		Messages: []master.Message{
			{Role: master.RoleSystem, Content: "You are checking that tool calls work. Call the tool record_word with the word \"callon\"."},
			{Role: master.RoleUser, Content: "Record the word \"callon\" now."},
		},
		Tools:      []master.Tool{probeTool},
		ToolChoice: "required",
		MaxTokens:  200,
	})
	if err != nil {
		return ToolProbe{}, err
	}
	for _, c := range resp.ToolCalls {
		if c.Name != probeTool.Name {
			continue
		}
		if err := checkArgs(probeTool, []byte(c.Arguments)); err != nil {
			return ToolProbe{Dialect: dialectOf(resp), Detail: "it called the tool with invalid arguments: " + err.Error()}, nil
		}
		return ToolProbe{CallsTools: true, Dialect: dialectOf(resp)}, nil
	}
	if len(resp.ToolCalls) > 0 {
		return ToolProbe{Dialect: dialectOf(resp), Detail: fmt.Sprintf("it called %q, a tool it was not offered", resp.ToolCalls[0].Name)}, nil
	}
	if d := Decode(resp.Content, []master.Tool{probeTool}); len(d.Calls) > 0 {
		return ToolProbe{Detail: fmt.Sprintf("it writes its calls into its text (%s), which this provider's tool_dialect strict does not read: set tool_dialect auto", d.Form)}, nil
	}
	text := strings.TrimSpace(resp.Content)
	if text == "" {
		return ToolProbe{Detail: "it answered nothing"}, nil
	}
	return ToolProbe{Detail: "it answered in text instead of calling the tool: " + master.Truncate(strings.Join(strings.Fields(text), " "), 120)}, nil
}

func dialectOf(resp master.ChatResponse) string {
	if resp.Dialect != "" {
		return resp.Dialect
	}
	return "native"
}
