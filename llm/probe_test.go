package llm_test

import (
	"strings"
	"testing"

	"github.com/callonbot/callon/llm"
	"github.com/callonbot/callon/llm/llmtest"
)

// ProbeTools tells a model that calls tools natively, one that writes
// them in its text (and whether the provider reads that), and one that
// cannot call tools at all.
func TestProbeTools(t *testing.T) {
	t.Parallel()
	tagged := llmtest.Text(`<tool_call>{"name": "record_word", "arguments": {"word": "callon"}}</tool_call>`)
	for _, c := range []struct {
		name, dialect string
		answer        llmtest.Reply
		want          llm.ToolProbe
		detail        string
	}{
		{"native", llm.DialectStrict, llmtest.Call("record_word", `{"word":"callon"}`), llm.ToolProbe{CallsTools: true, Dialect: "native"}, ""},
		{"tags, decoded", llm.DialectAuto, tagged, llm.ToolProbe{CallsTools: true, Dialect: llm.FormTags}, ""},
		{"tags, strict", llm.DialectStrict, tagged, llm.ToolProbe{}, "writes its calls into its text (tags)"},
		{"text only", llm.DialectAuto, llmtest.Text("callon"), llm.ToolProbe{}, "answered in text instead of calling the tool: callon"},
		{"bad arguments", llm.DialectStrict, llmtest.Call("record_word", `{"words":"x"}`), llm.ToolProbe{Dialect: "native"}, "invalid arguments"},
		{"another tool", llm.DialectStrict, llmtest.Call("shell", `{}`), llm.ToolProbe{Dialect: "native"}, `called "shell"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, client := setup(t, llmtest.Always(c.answer), func(cfg *llm.Config) { cfg.ToolDialect = c.dialect })
			got, err := llm.ProbeTools(t.Context(), client, "local-model")
			if err != nil {
				t.Fatal(err)
			}
			detail := got.Detail
			got.Detail = ""
			if got != c.want || !strings.Contains(detail, c.detail) || (c.detail == "" && detail != "") {
				t.Errorf("ProbeTools = %+v (%q), want %+v (%q)", got, detail, c.want, c.detail)
			}
			req := srv.Requests()[0].Request
			if req.ToolChoice != "required" || len(req.Tools) != 1 || req.Model != "local-model" {
				t.Errorf("the probe request: choice %q, %d tools, model %q", req.ToolChoice, len(req.Tools), req.Model)
			}
		})
	}
	_, client := setup(t, llmtest.Always(llmtest.Status(400, "model does not support tools")))
	if _, err := llm.ProbeTools(t.Context(), client, "m"); err == nil || !strings.Contains(err.Error(), "does the model support tool calling?") {
		t.Errorf("a server that refuses tools: %v", err)
	}
}
