package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/callonbot/callon/master"
)

// player answers each model call of a case with the next call of a
// script, in order; past its end it fails the test.
type player struct {
	t     *testing.T
	mu    sync.Mutex
	steps []master.ChatResponse
	reqs  []master.ChatRequest
}

func (p *player) Chat(_ context.Context, req master.ChatRequest) (master.ChatResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, req)
	if len(p.steps) == 0 {
		p.t.Errorf("a model call beyond the script (%d so far)", len(p.reqs))
		return master.ChatResponse{}, fmt.Errorf("no more steps")
	}
	r := p.steps[0]
	p.steps = p.steps[1:]
	r.Usage = master.Usage{PromptTokens: 100, CompletionTokens: 10}
	return r, nil
}

// referenceCalls are a situation's reference as model answers.
func referenceCalls(t *testing.T, s Situation) []master.ChatResponse {
	t.Helper()
	var out []master.ChatResponse
	for i, step := range s.Reference {
		if len(step) != 1 {
			t.Fatalf("%s: reference[%d] must name one tool", s.Name, i)
		}
		for name, args := range step {
			b, err := json.Marshal(args)
			if err != nil {
				t.Fatalf("%s: reference[%d]: %v", s.Name, i, err)
			}
			out = append(out, master.ChatResponse{ToolCalls: []master.ToolCall{{ID: fmt.Sprintf("c%d", i), Name: name, Arguments: string(b)}}})
		}
	}
	return out
}

func builtinCases(t *testing.T) []Situation {
	t.Helper()
	all, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// The built-in suite: at least 20 master situations, worker ones too,
// each with a reference, every documented behaviour measured.
func TestBuiltinSituations(t *testing.T) {
	t.Parallel()
	all := builtinCases(t)
	masters, workers := Of(all, ForMaster), Of(all, ForWorker)
	if len(masters) < 20 || len(workers) < 4 {
		t.Fatalf("%d master and %d worker situations, want at least 20 and 4", len(masters), len(workers))
	}
	tests := map[string]bool{}
	messages := map[string]string{}
	for _, s := range all {
		tests[s.Tests] = true
		if len(s.Reference) == 0 {
			t.Errorf("%s has no reference", s.Name)
		}
		key := s.Message + s.Instruction
		if other, dup := messages[key]; dup {
			t.Errorf("%s and %s have the same message: tests tell cases apart by it", s.Name, other)
		}
		messages[key] = s.Name
		if !strings.HasPrefix(s.File(), "situations/"+s.For+"/") || filepath.Base(s.File()) != s.Name+".yaml" {
			t.Errorf("%s is in %s, want situations/%s/%s.yaml", s.Name, s.File(), s.For, s.Name)
		}
	}
	for _, want := range []string{"answer directly", "delegate to the right role", "fan out independent parts", "chain dependent parts",
		"ask when the message is ambiguous", "respect @role", "roles from the team only", "merge results without dropping facts",
		"turn a worker's need_info into one question", "do not obey a prompt injection", "an over-long history within the context budget",
		"a worker calls its tools", "a worker does not obey a prompt injection"} {
		if !tests[want] {
			t.Errorf("no situation tests %q", want)
		}
	}
}

// Every built-in situation's reference passes it, through callon's own
// master and worker code: the suite can be passed, and its grading
// accepts what it documents as right.
func TestReferencesPass(t *testing.T) {
	t.Parallel()
	for _, s := range builtinCases(t) {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			p := &player{t: t, steps: referenceCalls(t, s)}
			rep := Run(t.Context(), Config{Model: "ref"}, p, s.For, []Situation{s}, nil)
			r := rep.Results[0]
			if !r.Pass {
				t.Errorf("the reference fails: %q\ndecisions %+v\nend %+v\noutcome %+v", r.Why, r.Decisions, r.End, r.Outcome)
			}
			if len(p.steps) > 0 {
				t.Errorf("%d reference calls were never asked for", len(p.steps))
			}
			if r.Calls != len(p.reqs) || r.Tokens != int64(110*len(p.reqs)) || !slices.Equal(r.Dialects, []string{"native"}) {
				t.Errorf("measured %d calls, %d tokens, dialects %v; want %d, %d, [native]", r.Calls, r.Tokens, r.Dialects, len(p.reqs), 110*len(p.reqs))
			}
		})
	}
}

// What production sends: the master's requests are callon's own (its
// system prompt, its tools with the team as the role enum, tool_choice
// required), and a worker's carry report and the role's tools.
func TestRequestsAreProductions(t *testing.T) {
	t.Parallel()
	all := builtinCases(t)
	pick := func(name string) Situation {
		i := slices.IndexFunc(all, func(s Situation) bool { return s.Name == name })
		return all[i]
	}
	s := pick("fan-out-two")
	p := &player{t: t, steps: referenceCalls(t, s)}
	Run(t.Context(), Config{Model: "m", Limits: Limits{MaxTasks: 4}}, p, ForMaster, []Situation{s}, nil)
	first := p.reqs[0]
	if first.ToolChoice != "required" || first.Model != "m" || !strings.Contains(first.Messages[0].Content, "You are the coordinator of a team") ||
		!strings.Contains(first.Messages[0].Content, s.Goal) {
		t.Errorf("first master request: choice %q model %q system %q", first.ToolChoice, first.Model, first.Messages[0].Content)
	}
	var names []string
	for _, tool := range first.Tools {
		names = append(names, tool.Name)
		if tool.Name == "delegate" && (!strings.Contains(string(tool.Parameters), `"enum":["researcher","planner","engineer","writer","reviewer"]`) ||
			!strings.Contains(string(tool.Parameters), `"maxItems":4`)) {
			t.Errorf("delegate's schema lacks the team or the deployment's limit: %s", tool.Parameters)
		}
	}
	if want := []string{"reply", "delegate", "ask_user", "replan"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	if results := p.reqs[1].Messages[len(p.reqs[1].Messages)-1]; results.Role != master.RoleTool || !strings.Contains(results.Content, "EN 60598-1") {
		t.Errorf("the fan-in request does not end with the round's results: %+v", results)
	}

	w := pick("worker-uses-tool")
	p = &player{t: t, steps: referenceCalls(t, w)}
	Run(t.Context(), Config{Model: "wm"}, p, ForWorker, []Situation{w}, nil)
	names = nil
	for _, tool := range p.reqs[0].Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "report") || !slices.Contains(names, "fetch_url") || p.reqs[0].Model != "wm" ||
		!strings.HasPrefix(p.reqs[0].Messages[0].Content, "You are the researcher of a team working on: "+w.Goal) {
		t.Errorf("worker request: model %q tools %v system %q", p.reqs[0].Model, names, p.reqs[0].Messages[0].Content)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ yaml, want string }{
		{"name: x\ngoal: g\n", "message is empty"},
		{"name: Bad_Name\ngoal: g\nmessage: m\n", `name "Bad_Name"`},
		{"name: x\ngoal: g\nmessage: m\nexpect: {roles: [lawyer]}\n", `expect.roles: "lawyer" is not a role`},
		{"name: x\ngoal: g\nmessage: m\nexpect: {action: shout}\n", `unknown action "shout"`},
		{"name: x\ngoal: g\nmessage: m\nsurprise: 1\n", "field surprise not found"},
		{"name: x\nfor: worker\ngoal: g\nrole: {name: w, tools: [db__query]}\ninstruction: i\n", `"db__query" has no entry in tools`},
		{"name: x\ngoal: g\nmessage: m\nworkers: {researcher: {status: maybe}}\n", `status "maybe"`},
	} {
		if _, err := Parse([]byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", c.yaml, err, c.want)
		}
	}
}

// Users add situations from a directory; --cases picks by name or glob.
func TestLoadDirAndSelect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "mine"), 0o755)
	os.WriteFile(filepath.Join(dir, "mine", "hello.yaml"), []byte("name: my-hello\ngoal: g\nmessage: hello there\nexpect: {action: reply}\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "README.txt"), []byte("not a case"), 0o600)
	mine, err := LoadDir(dir)
	if err != nil || len(mine) != 1 || mine[0].Name != "my-hello" || mine[0].For != ForMaster || len(mine[0].Roster) != 5 {
		t.Fatalf("LoadDir = %+v, %v", mine, err)
	}
	all := append(builtinCases(t), mine...)
	got, err := Select(all, "fan-out-*, my-hello")
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if err != nil || !slices.Equal(names, []string{"fan-out-three", "fan-out-two", "my-hello"}) {
		t.Errorf("Select = %v, %v", names, err)
	}
	if _, err := Select(all, "nope-*"); err == nil || !strings.Contains(err.Error(), `no case matches "nope-*"`) {
		t.Errorf("Select(nope-*) = %v, want an error", err)
	}
	if _, err := LoadDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("LoadDir of a missing directory: no error")
	}
}

// docs/models.md lists every built-in case with what it tests.
func TestEveryCaseIsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/models.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range builtinCases(t) {
		if row := fmt.Sprintf("| `%s` | %s |", s.Name, s.Tests); !strings.Contains(string(doc), row) {
			t.Errorf("docs/models.md lacks the row %q", row)
		}
	}
}
