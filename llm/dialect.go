package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/callonbot/callon/master"
)

// Tool dialects: whether a provider's answers are searched for tool calls
// written into the text (many local models do that instead of filling
// tool_calls).
const (
	// DialectAuto decodes the forms below from an answer that has no
	// native tool calls: the default for every provider but OpenAI.
	DialectAuto = "auto"
	// DialectStrict takes tool calls from tool_calls only.
	DialectStrict = "strict"
)

// The forms a call written in text is recognised in; a decoded answer's
// master.ChatResponse.Dialect names its form ("" for native tool calls).
const (
	// FormTags is one or more <tool_call>{"name": …, "arguments": …}</tool_call>
	// blocks (Hermes, Qwen), with text around them allowed.
	FormTags = "tags"
	// FormJSON is an answer that is nothing but a JSON call object, or an
	// array of them (Llama 3.x, Mistral's [TOOL_CALLS]).
	FormJSON = "json"
	// FormFenced is an answer that is nothing but one fenced code block
	// (```json, ```tool_call or ```) holding what FormJSON accepts.
	FormFenced = "fenced"
	// FormCallLine is an answer that is one line, name({...}) or
	// name(key=value, …) with JSON values, optionally in [ ].
	FormCallLine = "call-line"
)

// Decoded is what Decode made of an answer's text.
type Decoded struct {
	Calls []master.ToolCall // nil when the text holds no call
	Form  string            // the form the calls were written in; "" when none
	// Rest is the text outside the calls (only FormTags leaves any).
	Rest string
	// Problem says why text written in a recognised form, naming an
	// offered tool, was not taken as a call; "" otherwise. For reports
	// (callon eval), never for the model.
	Problem string
}

// Decode finds tool calls written into an answer's text, in the forms
// above only, each naming a tool of offered with arguments that are a
// JSON object valid against that tool's schema. A form that holds
// anything else (an unknown tool, arguments that fail the schema, a call
// quoted inside a code span) is not a call: the text stays text. A
// decoded call is then handled exactly like a native one, by the same
// validation and authorization, since the model writing it is no more
// trusted than one filling tool_calls.
func Decode(content string, offered []master.Tool) Decoded {
	if len(offered) == 0 || strings.TrimSpace(content) == "" {
		return Decoded{}
	}
	text := stripThinking(content)
	if d, ok := decodeTags(text, offered); ok {
		return d
	}
	body := strings.TrimSpace(text)
	form := FormJSON
	if inner, ok := fencedBlock(body); ok {
		body, form = inner, FormFenced
	}
	for _, prefix := range []string{"[TOOL_CALLS]", "<|python_tag|>"} {
		body = strings.TrimSpace(strings.TrimPrefix(body, prefix))
	}
	if strings.HasPrefix(body, "{") || strings.HasPrefix(body, "[{") {
		raws, err := callObjects(body)
		if err != nil {
			return Decoded{}
		}
		return validated(raws, offered, form, "")
	}
	if form == FormJSON {
		if raw, ok := callLine(body, offered); ok {
			return validated([]rawCall{raw}, offered, FormCallLine, "")
		}
	}
	return Decoded{}
}

// rawCall is a call as written, before validation.
type rawCall struct {
	Name string
	Args json.RawMessage
}

// thinking is a leading reasoning block some servers leave in the text.
var thinking = regexp.MustCompile(`(?s)^\s*<think>.*?</think>`)

func stripThinking(s string) string { return thinking.ReplaceAllString(s, "") }

var (
	tagOpen  = "<tool_call>"
	tagClose = "</tool_call>"
)

// decodeTags decodes <tool_call> blocks; ok is false when the text has
// none outside code. A block left open at the very end counts when what
// follows the tag is one JSON object (the server stopped at the closing
// tag). Text around the blocks is kept as Rest.
func decodeTags(text string, offered []master.Tool) (Decoded, bool) {
	if !strings.Contains(text, tagOpen) {
		return Decoded{}, false
	}
	code := codeSpans(text)
	var raws []rawCall
	var rest strings.Builder
	for s := text; ; {
		i := strings.Index(s, tagOpen)
		if i < 0 {
			rest.WriteString(s)
			break
		}
		at := len(text) - len(s) + i
		if inSpan(code, at) {
			return Decoded{}, false // quoted: shown, not called
		}
		rest.WriteString(s[:i])
		s = s[i+len(tagOpen):]
		body, after, closed := strings.Cut(s, tagClose)
		if !closed && !isOneObject(body) {
			return Decoded{}, false
		}
		raw, err := callObjects(strings.TrimSpace(body))
		if err != nil || len(raw) != 1 {
			return Decoded{}, false
		}
		raws = append(raws, raw[0])
		s = after
	}
	return validated(raws, offered, FormTags, strings.TrimSpace(rest.String())), true
}

// isOneObject reports whether s is one JSON object and nothing else.
func isOneObject(s string) bool {
	dec := json.NewDecoder(strings.NewReader(s))
	var v map[string]json.RawMessage
	if dec.Decode(&v) != nil {
		return false
	}
	return strings.TrimSpace(s[dec.InputOffset():]) == ""
}

// codeSpans are the byte ranges of fenced blocks and inline code.
func codeSpans(s string) [][2]int {
	var spans [][2]int
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "```") {
			end := strings.Index(s[i+3:], "```")
			if end < 0 {
				spans = append(spans, [2]int{i, len(s)})
				break
			}
			spans = append(spans, [2]int{i, i + 3 + end + 3})
			i += 3 + end + 3
			continue
		}
		if s[i] == '`' {
			end := strings.IndexByte(s[i+1:], '`')
			if end < 0 {
				spans = append(spans, [2]int{i, len(s)})
				break
			}
			spans = append(spans, [2]int{i, i + 1 + end + 1})
			i += 1 + end + 1
			continue
		}
		i++
	}
	return spans
}

func inSpan(spans [][2]int, at int) bool {
	return slices.ContainsFunc(spans, func(sp [2]int) bool { return at >= sp[0] && at < sp[1] })
}

// fence is a whole answer that is one fenced block.
var fence = regexp.MustCompile("(?s)^```(json|tool_call|tool_code)?[ \t]*\n(.*?)\n?```$")

// fencedBlock returns the body of an answer that is one fenced block.
func fencedBlock(s string) (string, bool) {
	m := fence.FindStringSubmatch(s)
	if m == nil || strings.Contains(m[2], "```") {
		return "", false
	}
	return strings.TrimSpace(m[2]), true
}

// callObjects parses one call object or an array of them, and nothing
// else: {"name": …, "arguments"|"parameters": {…} or "<JSON text>"},
// optionally with "type": "function" and an "id".
func callObjects(s string) ([]rawCall, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if strings.TrimSpace(s[dec.InputOffset():]) != "" {
		return nil, fmt.Errorf("text after the call")
	}
	var objs []json.RawMessage
	if bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
		if err := json.Unmarshal(v, &objs); err != nil || len(objs) == 0 {
			return nil, fmt.Errorf("not a list of calls")
		}
	} else {
		objs = []json.RawMessage{v}
	}
	out := make([]rawCall, 0, len(objs))
	for _, o := range objs {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(o, &fields); err != nil {
			return nil, err
		}
		var c rawCall
		for k, val := range fields {
			switch k {
			case "name":
				if err := json.Unmarshal(val, &c.Name); err != nil {
					return nil, err
				}
			case "arguments", "parameters":
				if c.Args != nil {
					return nil, fmt.Errorf("arguments given twice")
				}
				c.Args = val
				var text string
				if json.Unmarshal(val, &text) == nil { // arguments as JSON text, as tool_calls carry them
					c.Args = json.RawMessage(text)
				}
			case "type":
				if string(val) != `"function"` {
					return nil, fmt.Errorf("type %s", val)
				}
			case "id":
			default:
				return nil, fmt.Errorf("field %q", k) // something else that happens to be JSON
			}
		}
		if c.Name == "" {
			return nil, fmt.Errorf("no name")
		}
		if c.Args == nil {
			c.Args = json.RawMessage(`{}`)
		}
		out = append(out, c)
	}
	return out, nil
}

// callLineRE is name(...) alone, optionally in [ ].
var callLineRE = regexp.MustCompile(`^\[?\s*([A-Za-z_][A-Za-z0-9_]*)\((.*)\)\s*\]?$`)

// callLine parses a one-line call: name({...}), name() or name(k=v, …)
// with JSON values. Only names of offered tools count.
func callLine(s string, offered []master.Tool) (rawCall, bool) {
	if strings.ContainsAny(s, "\n\r") {
		return rawCall{}, false
	}
	m := callLineRE.FindStringSubmatch(s)
	if m == nil || !slices.ContainsFunc(offered, func(t master.Tool) bool { return t.Name == m[1] }) {
		return rawCall{}, false
	}
	inner := strings.TrimSpace(m[2])
	switch {
	case inner == "":
		return rawCall{Name: m[1], Args: json.RawMessage(`{}`)}, true
	case strings.HasPrefix(inner, "{"):
		if !isOneObject(inner) {
			return rawCall{}, false
		}
		return rawCall{Name: m[1], Args: json.RawMessage(inner)}, true
	}
	args, ok := keywordArgs(inner)
	if !ok {
		return rawCall{}, false
	}
	return rawCall{Name: m[1], Args: args}, true
}

var keyword = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*`)

// keywordArgs turns k=v, k2=v2 (each v a JSON value) into a JSON object.
func keywordArgs(s string) (json.RawMessage, bool) {
	obj := map[string]json.RawMessage{}
	for s != "" {
		m := keyword.FindStringSubmatch(s)
		if m == nil {
			return nil, false
		}
		s = s[len(m[0]):]
		dec := json.NewDecoder(strings.NewReader(s))
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, false
		}
		if _, dup := obj[m[1]]; dup {
			return nil, false
		}
		obj[m[1]] = v
		s = strings.TrimSpace(s[dec.InputOffset():])
		if s == "" {
			break
		}
		if !strings.HasPrefix(s, ",") {
			return nil, false
		}
		s = strings.TrimPrefix(s, ",")
	}
	b, err := json.Marshal(obj)
	return b, err == nil
}

// validated turns raw calls into tool calls when every one names an
// offered tool and its arguments are an object valid against its schema;
// otherwise the answer holds no call, and Problem says why.
func validated(raws []rawCall, offered []master.Tool, form, rest string) Decoded {
	calls := make([]master.ToolCall, 0, len(raws))
	for i, r := range raws {
		j := slices.IndexFunc(offered, func(t master.Tool) bool { return t.Name == r.Name })
		if j < 0 {
			return Decoded{Problem: fmt.Sprintf("%s names %q, which is not an offered tool", form, r.Name)}
		}
		if err := checkArgs(offered[j], r.Args); err != nil {
			return Decoded{Problem: fmt.Sprintf("%s call of %s: %v", form, r.Name, err)}
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, r.Args); err != nil {
			return Decoded{Problem: fmt.Sprintf("%s call of %s: %v", form, r.Name, err)}
		}
		calls = append(calls, master.ToolCall{ID: fmt.Sprintf("text_call_%d", i), Name: r.Name, Arguments: compact.String()})
	}
	return Decoded{Calls: calls, Form: form, Rest: rest}
}

// checkArgs validates arguments against a tool's JSON schema (an empty
// schema takes any object).
func checkArgs(t master.Tool, args json.RawMessage) error {
	var instance any
	if err := json.Unmarshal(args, &instance); err != nil {
		return fmt.Errorf("arguments are not a JSON object")
	}
	if _, ok := instance.(map[string]any); !ok {
		return fmt.Errorf("arguments are not a JSON object")
	}
	if len(t.Parameters) == 0 {
		return nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(t.Parameters, &s); err != nil {
		return fmt.Errorf("the tool's schema cannot be read: %v", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("the tool's schema cannot be resolved: %v", err)
	}
	if err := rs.Validate(instance); err != nil {
		return fmt.Errorf("arguments do not match the schema: %v", err)
	}
	return nil
}
