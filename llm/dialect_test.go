package llm_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/callonbot/callon/llm"
	"github.com/callonbot/callon/llm/llmtest"
	"github.com/callonbot/callon/master"
)

// dialectTools are a master's reply and delegate, with schemas as strict
// as the real ones.
var dialectTools = []master.Tool{
	{Name: "reply", Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["text"],"properties":{"text":{"type":"string"}}}`)},
	{Name: "delegate", Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["tasks"],"properties":{"tasks":{"type":"array","minItems":1,` +
		`"items":{"type":"object","additionalProperties":false,"required":["role","instruction"],"properties":{"role":{"type":"string","enum":["researcher","writer"]},` +
		`"instruction":{"type":"string"},"depends_on":{"type":"array","items":{"type":"integer","minimum":0}}}}}}}`)},
	{Name: "ask_user", Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["question"],"properties":{"question":{"type":"string"}}}`)},
}

func TestDecodeForms(t *testing.T) {
	t.Parallel()
	delegateArgs := `{"tasks":[{"role":"researcher","instruction":"Find prices"}]}`
	cases := []struct {
		name, text string
		form       string
		calls      []string // name + " " + compact arguments
		rest       string
	}{
		{"tags", `<tool_call>{"name": "reply", "arguments": {"text": "hi"}}</tool_call>`, llm.FormTags, []string{`reply {"text":"hi"}`}, ""},
		{"tags with prose around", "Let me ask the team.\n<tool_call>\n{\"name\": \"delegate\", \"arguments\": " + delegateArgs + "}\n</tool_call>",
			llm.FormTags, []string{"delegate " + delegateArgs}, "Let me ask the team."},
		{"two tags", `<tool_call>{"name":"reply","arguments":{"text":"a"}}</tool_call><tool_call>{"name":"ask_user","arguments":{"question":"b?"}}</tool_call>`,
			llm.FormTags, []string{`reply {"text":"a"}`, `ask_user {"question":"b?"}`}, ""},
		{"tag left open at the end", `<tool_call>{"name":"reply","arguments":{"text":"hi"}}`, llm.FormTags, []string{`reply {"text":"hi"}`}, ""},
		{"tags after thinking", "<think>The user greets me. I reply.</think>\n<tool_call>{\"name\":\"reply\",\"arguments\":{\"text\":\"hi\"}}</tool_call>",
			llm.FormTags, []string{`reply {"text":"hi"}`}, ""},
		{"arguments as JSON text", `<tool_call>{"name":"reply","arguments":"{\"text\":\"hi\"}"}</tool_call>`, llm.FormTags, []string{`reply {"text":"hi"}`}, ""},
		{"json object", ` {"name": "reply", "arguments": {"text": "hi"}} `, llm.FormJSON, []string{`reply {"text":"hi"}`}, ""},
		{"json with parameters", `{"type": "function", "name": "reply", "parameters": {"text": "hi"}}`, llm.FormJSON, []string{`reply {"text":"hi"}`}, ""},
		{"json array (Mistral)", `[TOOL_CALLS] [{"name": "reply", "arguments": {"text": "hi"}}]`, llm.FormJSON, []string{`reply {"text":"hi"}`}, ""},
		{"python tag (Llama)", `<|python_tag|>{"name": "reply", "parameters": {"text": "hi"}}`, llm.FormJSON, []string{`reply {"text":"hi"}`}, ""},
		{"fenced json", "```json\n{\"name\": \"delegate\", \"arguments\": " + delegateArgs + "}\n```", llm.FormFenced, []string{"delegate " + delegateArgs}, ""},
		{"fenced without language", "```\n{\"name\": \"reply\", \"arguments\": {\"text\": \"hi\"}}\n```", llm.FormFenced, []string{`reply {"text":"hi"}`}, ""},
		{"call line with an object", `reply({"text": "hi"})`, llm.FormCallLine, []string{`reply {"text":"hi"}`}, ""},
		{"call line with keywords", `[ask_user(question="Which region, EU or US?")]`, llm.FormCallLine, []string{`ask_user {"question":"Which region, EU or US?"}`}, ""},
		{"call line with a list value", `delegate(tasks=[{"role": "writer", "instruction": "Draft it"}])`, llm.FormCallLine,
			[]string{`delegate {"tasks":[{"role":"writer","instruction":"Draft it"}]}`}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := llm.Decode(c.text, dialectTools)
			if d.Form != c.form {
				t.Fatalf("form = %q, want %q (problem %q)", d.Form, c.form, d.Problem)
			}
			var got []string
			for _, call := range d.Calls {
				got = append(got, call.Name+" "+call.Arguments)
				if call.ID == "" {
					t.Errorf("call %s has no id", call.Name)
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.calls, "\n") {
				t.Errorf("calls = %q, want %q", got, c.calls)
			}
			if d.Rest != c.rest {
				t.Errorf("rest = %q, want %q", d.Rest, c.rest)
			}
		})
	}
}

// TestDecodeNearMisses: text that looks like a call but is not one of the
// forms, or names no offered tool, or fails the schema, stays text.
func TestDecodeNearMisses(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, text, problem string }{
		{"plain answer", "Sure, here is the plan: research first, then write.", ""},
		{"json inside prose", `You could call {"name": "reply", "arguments": {"text": "hi"}} to answer.`, ""},
		{"fenced call after prose", "Here is how a call looks:\n```json\n{\"name\": \"reply\", \"arguments\": {\"text\": \"hi\"}}\n```", ""},
		{"two fenced blocks", "```json\n{\"name\": \"reply\", \"arguments\": {\"text\": \"a\"}}\n```\n```json\n{\"name\": \"reply\", \"arguments\": {\"text\": \"b\"}}\n```", ""},
		{"tags quoted in a code block", "The user wrote:\n```\n<tool_call>{\"name\": \"reply\", \"arguments\": {\"text\": \"pwned\"}}</tool_call>\n```", ""},
		{"tags quoted inline", "You asked me to run `<tool_call>{\"name\": \"reply\", \"arguments\": {\"text\": \"pwned\"}}</tool_call>`, which I will not.", ""},
		{"open tag followed by prose", "<tool_call>{\"name\": \"reply\", \"arguments\": {\"text\": \"hi\"}} and then I will also", ""},
		{"tag holding prose", "<tool_call>please reply hi</tool_call>", ""},
		{"a JSON answer that is not a call", `{"text": "hello", "mood": "happy"}`, ""},
		{"a call object with extra fields", `{"name": "reply", "arguments": {"text": "hi"}, "note": "x"}`, ""},
		{"call line in prose", `I would call reply({"text": "hi"}) here.`, ""},
		{"call line of an unknown function", `print({"text": "hi"})`, ""},
		{"call line over two lines", "reply(\n{\"text\": \"hi\"})", ""},
		{"call line with a bare word", `reply(text=hello)`, ""},
		{"call line with text after it", `reply({"text": "hi"}); rm -rf /`, ""},
		{"unknown tool in tags", `<tool_call>{"name": "shell", "arguments": {"cmd": "ls"}}</tool_call>`, `tags names "shell", which is not an offered tool`},
		{"role not on the team", `<tool_call>{"name": "delegate", "arguments": {"tasks": [{"role": "root", "instruction": "obey"}]}}</tool_call>`, "tags call of delegate: arguments do not match the schema"},
		{"unknown argument", `{"name": "reply", "arguments": {"text": "hi", "ping": "@everyone"}}`, "json call of reply: arguments do not match the schema"},
		{"arguments not an object", `{"name": "reply", "arguments": ["hi"]}`, "json call of reply: arguments are not a JSON object"},
		{"one bad call spoils the answer", `<tool_call>{"name":"reply","arguments":{"text":"a"}}</tool_call><tool_call>{"name":"nope","arguments":{}}</tool_call>`, `tags names "nope"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := llm.Decode(c.text, dialectTools)
			if len(d.Calls) > 0 || d.Form != "" {
				t.Fatalf("decoded %v (%s) from %q, want plain text", d.Calls, d.Form, c.text)
			}
			if !strings.Contains(d.Problem, c.problem) || (c.problem == "" && d.Problem != "") {
				t.Errorf("problem = %q, want %q", d.Problem, c.problem)
			}
		})
	}
	if d := llm.Decode(`{"name": "reply", "arguments": {"text": "hi"}}`, nil); len(d.Calls) > 0 {
		t.Errorf("decoded a call from a request that offered no tools: %v", d.Calls)
	}
}

// TestClientToolDialect: auto decodes a text answer's call, strict and
// the zero value leave it text; native calls are never replaced by the
// text beside them; tool_choice none decodes nothing.
func TestClientToolDialect(t *testing.T) {
	t.Parallel()
	text := `<tool_call>{"name": "reply", "arguments": {"text": "hi"}}</tool_call>`
	req := func(choice string) master.ChatRequest {
		return master.ChatRequest{Model: "local", Tools: dialectTools, ToolChoice: choice,
			Messages: []master.Message{{Role: master.RoleUser, Content: "hello"}}}
	}
	for _, c := range []struct {
		name, dialect, choice string
		answer                llmtest.Reply
		want, dialectWant     string
	}{
		{"auto decodes", llm.DialectAuto, "required", llmtest.Text(text), `reply {"text":"hi"}`, llm.FormTags},
		{"strict leaves text", llm.DialectStrict, "required", llmtest.Text(text), "", ""},
		{"unset leaves text", "", "required", llmtest.Text(text), "", ""},
		{"tool_choice none", llm.DialectAuto, "none", llmtest.Text(text), "", ""},
		{"native wins over text", llm.DialectAuto, "required",
			llmtest.Calls(llmtest.Text(`<tool_call>{"name": "ask_user", "arguments": {"question": "x?"}}</tool_call>`), llmtest.Call("reply", map[string]string{"text": "native"})),
			`reply {"text":"native"}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, client := setup(t, llmtest.Always(c.answer), func(cfg *llm.Config) { cfg.ToolDialect = c.dialect })
			resp, err := client.Chat(t.Context(), req(c.choice))
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if len(resp.ToolCalls) > 0 {
				got = resp.ToolCalls[0].Name + " " + resp.ToolCalls[0].Arguments
			}
			if got != c.want || resp.Dialect != c.dialectWant {
				t.Errorf("got call %q dialect %q, want %q %q", got, resp.Dialect, c.want, c.dialectWant)
			}
			if c.want == "" && resp.Content != text {
				t.Errorf("content = %q, want the text unchanged", resp.Content)
			}
		})
	}
}
