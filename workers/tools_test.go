package workers

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/callonbot/callon/master"
)

func TestParseReport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, args string
		want       master.Outcome
		wantErr    string // substring; "" means valid
	}{
		{name: "done", args: `{"status":"done","result":" the answer "}`,
			want: master.Outcome{State: master.TaskDone, Result: "the answer"}},
		{name: "blocked gives the reason", args: `{"status":"blocked","result":"no access to the repo"}`,
			want: master.Outcome{State: master.TaskBlocked, Result: "no access to the repo"}},
		{name: "need_info keeps the work so far and the question", args: `{"status":"need_info","result":"half done","question":"Which region?"}`,
			want: master.Outcome{State: master.TaskNeedInfo, Result: "half done", Question: "Which region?"}},
		{name: "need_info with an empty result", args: `{"status":"need_info","result":"","question":"Which region?"}`,
			want: master.Outcome{State: master.TaskNeedInfo, Question: "Which region?"}},
		{name: "need_info without question", args: `{"status":"need_info","result":"x"}`, wantErr: `"question" is required`},
		{name: "need_info with empty question", args: `{"status":"need_info","result":"x","question":" "}`, wantErr: `"question" is required`},
		{name: "unknown status", args: `{"status":"finished","result":"x"}`, wantErr: `"status" is "finished"`},
		{name: "missing status", args: `{"result":"x"}`, wantErr: `"status" is missing`},
		{name: "missing result", args: `{"status":"done"}`, wantErr: `"result" is missing`},
		{name: "empty result", args: `{"status":"done","result":"  "}`, wantErr: `"result" is empty`},
		{name: "blocked without reason", args: `{"status":"blocked","result":""}`, wantErr: "why you are blocked"},
		{name: "wrong type", args: `{"status":"done","result":42}`, wantErr: "not valid JSON"},
		{name: "not json", args: `{"status":"done",`, wantErr: "not valid JSON"},
		{name: "unknown field", args: `{"status":"done","result":"x","confidence":1}`, wantErr: "unknown field"},
		{name: "trailing text", args: `{"status":"done","result":"x"} and more`, wantErr: "text after"},
		{name: "empty arguments", args: ``, wantErr: `"status" is missing`},
		{name: "null", args: `null`, wantErr: `"status" is missing`},
	}
	for _, tt := range tests {
		rep, err := parseReport(tt.args)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: error %v, want none", tt.name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.wantErr)
		case tt.wantErr == "" && rep.outcome() != tt.want:
			t.Errorf("%s: outcome %+v, want %+v", tt.name, rep.outcome(), tt.want)
		}
	}
}

func TestParseProgress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, args string
		want       progress
		wantErr    string
	}{
		{name: "valid", args: `{"percent":40,"note":" reading\n the docs "}`, want: progress{40, "reading the docs"}},
		{name: "bounds", args: `{"percent":100,"note":""}`, want: progress{100, ""}},
		{name: "long note is cut", args: `{"percent":1,"note":"` + strings.Repeat("a", 300) + `"}`,
			want: progress{1, strings.Repeat("a", maxNoteChars-1) + "…"}},
		{name: "above 100", args: `{"percent":101,"note":"x"}`, wantErr: `"percent" is 101`},
		{name: "negative", args: `{"percent":-1,"note":"x"}`, wantErr: `"percent" is -1`},
		{name: "fraction", args: `{"percent":50.5,"note":"x"}`, wantErr: "not valid JSON"},
		{name: "string percent", args: `{"percent":"50","note":"x"}`, wantErr: "not valid JSON"},
		{name: "missing percent", args: `{"note":"x"}`, wantErr: `"percent" is missing`},
		{name: "missing note", args: `{"percent":5}`, wantErr: `"note" is missing`},
		{name: "unknown field", args: `{"percent":5,"note":"x","eta":3}`, wantErr: "unknown field"},
	}
	for _, tt := range tests {
		got, err := parseProgress(tt.args)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: error %v, want none", tt.name, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.wantErr)
		case tt.wantErr == "" && got != tt.want:
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestToolSchemas(t *testing.T) {
	t.Parallel()
	wantRequired := map[string][]string{
		ToolReport:   {"status", "result"},
		ToolProgress: {"percent", "note"},
	}
	if len(workerTools) != len(wantRequired) {
		t.Fatalf("got %d tools, want %d", len(workerTools), len(wantRequired))
	}
	for _, tool := range workerTools {
		var s struct {
			Type                 string         `json:"type"`
			AdditionalProperties *bool          `json:"additionalProperties"`
			Required             []string       `json:"required"`
			Properties           map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(tool.Parameters, &s); err != nil {
			t.Fatalf("%s: schema is not valid JSON: %v", tool.Name, err)
		}
		want, ok := wantRequired[tool.Name]
		switch {
		case !ok:
			t.Errorf("unexpected tool %q", tool.Name)
		case s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties:
			t.Errorf("%s: got type %q, additionalProperties %v; want a closed object", tool.Name, s.Type, s.AdditionalProperties)
		case strings.Join(s.Required, ",") != strings.Join(want, ","):
			t.Errorf("%s: required = %v, want %v", tool.Name, s.Required, want)
		}
		for _, name := range s.Required {
			if _, ok := s.Properties[name]; !ok {
				t.Errorf("%s: required %q has no property", tool.Name, name)
			}
		}
	}
}
