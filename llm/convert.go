package llm

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/callonbot/callon/master"
)

// emptySchema stands in for a tool without parameters: servers reject
// "parameters": null.
const emptySchema = `{"type":"object","properties":{}}`

// zeroTemperature is sent for a requested temperature of 0: go-openai
// omits a zero temperature (omitempty), which would leave the server's
// default (often 0.7 or 1) in place. Reasoning models accept no
// temperature but 1, so theirs is left out.
const zeroTemperature = 1e-6

// toOpenAI maps a request to go-openai's form.
func toOpenAI(req master.ChatRequest) (openai.ChatCompletionRequest, error) {
	out := openai.ChatCompletionRequest{Model: req.Model}
	if req.Model == "" {
		return out, errors.New("no model")
	}
	for _, m := range req.Messages {
		om := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		if len(m.Images) > 0 {
			// Text and images go as parts; go-openai refuses both fields.
			om.Content, om.MultiContent = "", imageParts(m)
		}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{
				ID:       tc.ID,
				Type:     openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
			})
		}
		out.Messages = append(out.Messages, om)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(emptySchema)
		} else if !json.Valid(params) {
			return out, fmt.Errorf("tool %s: parameters are not valid JSON", t.Name)
		}
		out.Tools = append(out.Tools, openai.Tool{
			Type:     openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params},
		})
	}
	switch req.ToolChoice {
	case "":
	case "auto", "none", "required":
		// Servers reject a tool_choice without tools.
		if len(out.Tools) > 0 {
			out.ToolChoice = req.ToolChoice
		}
	default:
		return out, fmt.Errorf("unknown tool choice %q", req.ToolChoice)
	}
	if req.Temperature != nil {
		out.Temperature = *req.Temperature
		if out.Temperature == 0 && !reasoningModel(req.Model) {
			out.Temperature = zeroTemperature
		}
	}
	if req.MaxTokens > 0 {
		if reasoningModel(req.Model) {
			out.MaxCompletionTokens = req.MaxTokens
		} else {
			// max_tokens, deprecated by OpenAI for its reasoning models, is
			// what every OpenAI-compatible server reads (Ollama, vLLM…).
			out.MaxTokens = req.MaxTokens //nolint:staticcheck // see above
		}
	}
	return out, nil
}

// imageParts is a message with images as content parts: its text, then
// each image as a data URL.
func imageParts(m master.Message) []openai.ChatMessagePart {
	parts := []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: m.Content}}
	for _, img := range m.Images {
		parts = append(parts, openai.ChatMessagePart{
			Type: openai.ChatMessagePartTypeImageURL,
			ImageURL: &openai.ChatMessageImageURL{
				URL:    "data:" + img.ContentType + ";base64," + base64.StdEncoding.EncodeToString(img.Data),
				Detail: openai.ImageURLDetailAuto,
			},
		})
	}
	return parts
}

// reasoningModel reports whether OpenAI (and go-openai's validation)
// refuses max_tokens for the model and wants max_completion_tokens, which
// older OpenAI-compatible servers do not understand.
func reasoningModel(model string) bool {
	for _, prefix := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(model, prefix) {
			return true
		}
	}
	return false
}

// fromOpenAI maps the first choice of a response, and its usage.
func fromOpenAI(resp openai.ChatCompletionResponse) (master.ChatResponse, error) {
	if len(resp.Choices) == 0 {
		return master.ChatResponse{}, errors.New("answer has no choices")
	}
	msg := resp.Choices[0].Message
	out := master.ChatResponse{
		Content: msg.Content,
		Usage: master.Usage{
			PromptTokens:     int64(resp.Usage.PromptTokens),
			CompletionTokens: int64(resp.Usage.CompletionTokens),
		},
	}
	for i, tc := range msg.ToolCalls {
		id := tc.ID
		if id == "" {
			// Some servers (older Ollama) omit ids; the tool message that
			// answers the call needs one.
			id = fmt.Sprintf("call_%d", i)
		}
		out.ToolCalls = append(out.ToolCalls, master.ToolCall{ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return out, nil
}
