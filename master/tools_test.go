package master

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestParseDecision(t *testing.T) {
	t.Parallel()
	roster := DefaultRoles()
	tests := []struct {
		name, tool, args string
		mustReply        bool
		wantErr          string // substring; "" means valid
		check            func(t *testing.T, d decision)
	}{
		{name: "reply", tool: "reply", args: `{"text":" hi "}`, check: func(t *testing.T, d decision) {
			if d.text != "hi" {
				t.Errorf("text = %q, want %q", d.text, "hi")
			}
		}},
		{name: "empty reply", tool: "reply", args: `{"text":""}`, wantErr: "non-empty"},
		{name: "not json", tool: "reply", args: `{"text":`, wantErr: "not valid JSON"},
		{name: "unknown field", tool: "reply", args: `{"txt":"x"}`, wantErr: "unknown field"},
		{name: "unknown tool", tool: "shout", args: `{}`, wantErr: `no tool "shout"`},
		{name: "delegate", tool: "delegate", args: `{"tasks":[{"role":"researcher","instruction":"a"},{"role":"writer","instruction":"b","depends_on":[0,0]}]}`,
			check: func(t *testing.T, d decision) {
				if len(d.tasks) != 2 || !slices.Equal(d.tasks[1].DependsOn, []int{0}) {
					t.Errorf("tasks = %+v, want 2 with the second depending on [0]", d.tasks)
				}
			}},
		{name: "unknown role", tool: "delegate", args: `{"tasks":[{"role":"chef","instruction":"a"}]}`, wantErr: `"chef" is not on the team`},
		{name: "forward dependency", tool: "delegate", args: `{"tasks":[{"role":"writer","instruction":"a","depends_on":[1]},{"role":"writer","instruction":"b"}]}`, wantErr: "only name earlier tasks"},
		{name: "too many tasks", tool: "delegate", args: `{"tasks":[` + strings.Repeat(`{"role":"writer","instruction":"a"},`, 6) + `{"role":"writer","instruction":"a"}]}`, wantErr: "at most 6 tasks"},
		{name: "no tasks", tool: "delegate", args: `{"tasks":[]}`, wantErr: "at least one task"},
		{name: "ask", tool: "ask_user", args: `{"question":"which?"}`, check: func(t *testing.T, d decision) {
			if d.text != "which?" {
				t.Errorf("question = %q", d.text)
			}
		}},
		{name: "replan", tool: "replan", args: `{"roles":[{"name":"chef","description":"cooks"}],"reason":"food"}`, check: func(t *testing.T, d decision) {
			if len(d.roles) != 1 || d.roles[0].Name != "chef" || d.reason != "food" {
				t.Errorf("replan = %+v", d)
			}
		}},
		{name: "replan bad name", tool: "replan", args: `{"roles":[{"name":"Chef","description":"cooks"}],"reason":"x"}`, wantErr: "lowercase slug"},
		{name: "replan duplicate", tool: "replan", args: `{"roles":[{"name":"a","description":"x"},{"name":"a","description":"y"}],"reason":"x"}`, wantErr: "twice"},
		{name: "must reply", tool: "delegate", args: `{"tasks":[{"role":"writer","instruction":"a"}]}`, mustReply: true, wantErr: "only reply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := parseDecision(ToolCall{ID: "c", Name: tt.tool, Arguments: tt.args}, decisionEnv{roster: roster, maxTasks: 6, maxRoles: 8, mustReply: tt.mustReply})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("%s: error %v, want none", tt.name, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.wantErr)
			case tt.check != nil && err == nil:
				tt.check(t, d)
			}
		})
	}
}

func TestMasterToolsRoleEnum(t *testing.T) {
	t.Parallel()
	tools := masterTools(decisionEnv{roster: DefaultRoles()[:2], maxTasks: 6, maxRoles: 8})
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"reply", "delegate", "ask_user", "replan"}) {
		t.Fatalf("tools = %v, want reply, delegate, ask_user, replan", names)
	}
	var s struct {
		Properties struct {
			Tasks struct {
				Items struct {
					Properties struct {
						Role struct {
							Enum []string `json:"enum"`
						} `json:"role"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"tasks"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tools[1].Parameters, &s); err != nil {
		t.Fatal(err)
	}
	if got := s.Properties.Tasks.Items.Properties.Role.Enum; !slices.Equal(got, []string{"researcher", "planner"}) {
		t.Errorf("delegate role enum = %v, want the team's names", got)
	}
	if only := masterTools(decisionEnv{roster: DefaultRoles(), maxTasks: 6, maxRoles: 8, mustReply: true}); len(only) != 1 || only[0].Name != "reply" {
		t.Errorf("at the limit the tools are %v, want only reply", only)
	}
}
