package eval

import (
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/callonbot/callon/master"
)

// Situation is one case of callon eval, read from a YAML file (the format
// is documented in docs/models.md): for the master, a team, its history,
// a message and what each worker will answer; for a worker, a role, a
// task and what its tools return. Expect says what a model that handles
// it well does, checked structurally.
type Situation struct {
	Name  string `yaml:"name"`
	Tests string `yaml:"tests"` // the behaviour it measures, in a few words
	About string `yaml:"about"` // what it sets up, for people reading a report
	// For is "master" (the default) or "worker": which model it measures.
	For  string `yaml:"for"`
	Goal string `yaml:"goal"`

	// Master situations.
	Roster      []RoleDef      `yaml:"roster"`  // the team; the default team when empty
	Catalog     []RoleDef      `yaml:"catalog"` // the channel's roles a replan may add
	History     []ExchangeDef  `yaml:"history"`
	Author      string         `yaml:"author"` // "owner" (default) or "member"
	Message     string         `yaml:"message"`
	Attachments []FileDef      `yaml:"attachments"`
	Rounds      [][]TaskDef    `yaml:"rounds"`  // rounds delegated for the message already, with their results
	Workers     map[string]Act `yaml:"workers"` // what each role's worker answers a task

	// Worker situations.
	Role        RoleDef            `yaml:"role"`
	Team        []RoleDef          `yaml:"team"` // the roles it may hand off to
	Instruction string             `yaml:"instruction"`
	Deps        []TaskDef          `yaml:"deps"`  // results of the tasks it builds on
	Tools       map[string]ToolDef `yaml:"tools"` // the role's own tools, by function name

	Expect Expect `yaml:"expect"`
	// Reference is what a model that passes does, call by call, each a
	// map of one tool name to its arguments. callon never sends it to a
	// model; its tests play it back to check the case can be passed.
	Reference []map[string]any `yaml:"reference"`
	// MaxCalls bounds the model calls of the case; 0 takes the default.
	MaxCalls int `yaml:"max_calls"`

	file string // where it was read from
}

// RoleDef is a role of a situation's team.
type RoleDef struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Prompt      string   `yaml:"prompt"`
	Tools       []string `yaml:"tools"`
}

// ExchangeDef is an earlier message of the thread and the team's answer.
type ExchangeDef struct {
	User  string `yaml:"user"`
	Team  string `yaml:"team"`
	Asked bool   `yaml:"asked"` // the answer was a question
	// Repeat makes this many copies of the exchange (numbered "#1", "#2"…
	// where the text has "{n}"): an over-long history in a few lines.
	Repeat int `yaml:"repeat"`
}

// FileDef is a text file attached to the message.
type FileDef struct {
	Name string `yaml:"name"`
	Text string `yaml:"text"`
}

// TaskDef is a task with its outcome: a round already delegated, or a
// dependency of a worker's task.
type TaskDef struct {
	Role        string `yaml:"role"`
	Instruction string `yaml:"instruction"`
	Status      string `yaml:"status"` // done (default), failed, blocked, need_info
	Result      string `yaml:"result"`
	Question    string `yaml:"question"` // need_info
}

// Act is what a role's worker answers when the master delegates to it:
// one answer, or a list used in turn by its tasks (the last repeats).
type Act []Answer

// Answer is one scripted worker outcome.
type Answer struct {
	Status   string `yaml:"status"` // done (default), failed, blocked, need_info
	Result   string `yaml:"result"`
	Question string `yaml:"question"` // need_info: what it asks
	// Answered is its result once the master (or the user) answered
	// its question.
	Answered string `yaml:"answered"`
}

// UnmarshalYAML takes one answer or a list of them.
func (a *Act) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		var list []Answer
		if err := n.Decode(&list); err != nil {
			return err
		}
		*a = list
		return nil
	}
	var one Answer
	if err := n.Decode(&one); err != nil {
		return err
	}
	*a = Act{one}
	return nil
}

// ToolDef is one of a worker's own tools: its schema (fetch_url has its
// real one) and its scripted results.
type ToolDef struct {
	Description string `yaml:"description"`
	Parameters  string `yaml:"parameters"` // a JSON schema; an object of any fields when empty
	// Results answer the calls: the first whose Match is in the call's
	// arguments (an empty Match matches every call).
	Results []ToolResultDef `yaml:"results"`
}

// ToolResultDef is a scripted result of a tool.
type ToolResultDef struct {
	Match   string `yaml:"match"`
	Result  string `yaml:"result"`
	IsError bool   `yaml:"is_error"`
}

// Expect is what a model that handles the situation well does. Every
// field is optional; a case with none checks only what every case checks
// (a tool was called, every call was valid, only roles of the team).
type Expect struct {
	// Action is the first decision: any of reply, delegate, ask_user,
	// replan, answer_worker.
	Action Strings `yaml:"action"`
	// End is how the turn ends: reply or ask_user.
	End Strings `yaml:"end"`
	// Roles are the roles of the first delegation, as a set.
	Roles []string `yaml:"roles"`
	// Parallel: the first delegation has two tasks or more, none
	// depending on another.
	Parallel bool `yaml:"parallel"`
	// Chain lists [before, after] pairs of roles: a task of after needs
	// a task of before (depends_on, or a later round).
	Chain [][]string `yaml:"chain"`
	// Facts must all be in the final answer, exactly as written.
	Facts []string `yaml:"facts"`
	// Forbid must be in nothing the model wrote (answers, questions,
	// instructions, tool arguments); case-insensitive.
	Forbid []string `yaml:"forbid"`
	// ForbidInTasks must be in no task's instruction nor answer to a
	// worker; case-insensitive (a reply may name what it refused).
	ForbidInTasks []string `yaml:"forbid_in_tasks"`
	// ForbidActions must not be called at all, even when callon then
	// refuses the call (a replan the sender may not make).
	ForbidActions []string `yaml:"forbid_actions"`
	// Question: the turn ends with one question (one "?") holding each
	// of these, case-insensitive. For a worker: its need_info question.
	Question []string `yaml:"question"`
	// Answer: an answer_worker answer holding each of these,
	// case-insensitive.
	Answer []string `yaml:"answer"`
	// MaxPromptTokens bounds every call's prompt, as the server counts.
	MaxPromptTokens int64 `yaml:"max_prompt_tokens"`

	// Worker situations.
	Status      string   `yaml:"status"`       // done, blocked or need_info
	ToolsCalled []string `yaml:"tools_called"` // each called at least once
	ForbidTools []string `yaml:"forbid_tools"` // none called
}

// Strings is one string or a list of them.
type Strings []string

// UnmarshalYAML takes a scalar or a sequence.
func (s *Strings) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*s = Strings{n.Value}
		return nil
	}
	var list []string
	if err := n.Decode(&list); err != nil {
		return err
	}
	*s = list
	return nil
}

var caseName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// Parse reads and checks one situation.
func Parse(data []byte) (Situation, error) {
	var s Situation
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("not a situation: %v", err)
	}
	s.For = strings.TrimSpace(s.For)
	if s.For == "" {
		s.For = ForMaster
	}
	if len(s.Roster) == 0 && s.For == ForMaster {
		s.Roster = DefaultTeam()
	}
	if s.Author == "" {
		s.Author = "owner"
	}
	return s, s.check()
}

// Who a situation measures.
const (
	ForMaster = "master"
	ForWorker = "worker"
)

// Decisions of the master, as Expect names them.
var actions = []string{"reply", "delegate", "ask_user", "replan", "answer_worker"}

var statuses = []string{"", "done", "failed", "blocked", "need_info"}

// check names the first thing wrong with a situation.
func (s Situation) check() error {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if !caseName.MatchString(s.Name) {
		bad("name %q must be a-z, 0-9 and -", s.Name)
	}
	if strings.TrimSpace(s.Goal) == "" {
		bad("goal is empty")
	}
	switch s.For {
	case ForMaster:
		s.checkMaster(bad)
	case ForWorker:
		s.checkWorker(bad)
	default:
		bad("for must be master or worker, got %q", s.For)
	}
	if s.MaxCalls < 0 || s.MaxCalls > 50 {
		bad("max_calls must be 0 to 50")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

func (s Situation) checkMaster(bad func(string, ...any)) {
	if strings.TrimSpace(s.Message) == "" && len(s.Attachments) == 0 {
		bad("message is empty")
	}
	if s.Author != "owner" && s.Author != "member" {
		bad("author must be owner or member, got %q", s.Author)
	}
	names := map[string]bool{}
	for _, r := range append(slices.Clone(s.Roster), s.Catalog...) {
		if !caseName.MatchString(r.Name) {
			bad("role name %q must be a-z, 0-9 and -", r.Name)
		}
		names[r.Name] = true
	}
	known := func(field, role string) {
		if !names[role] {
			bad("%s: %q is not a role of the roster or catalog", field, role)
		}
	}
	for role, act := range s.Workers {
		known("workers", role)
		for _, a := range act {
			if !slices.Contains(statuses, a.Status) {
				bad("workers.%s: status %q", role, a.Status)
			}
		}
	}
	for i, round := range s.Rounds {
		if len(round) == 0 {
			bad("rounds[%d] is empty", i)
		}
		for _, t := range round {
			known(fmt.Sprintf("rounds[%d]", i), t.Role)
			if !slices.Contains(statuses, t.Status) {
				bad("rounds[%d]: status %q", i, t.Status)
			}
		}
	}
	for _, r := range s.Expect.Roles {
		known("expect.roles", r)
	}
	for _, pair := range s.Expect.Chain {
		if len(pair) != 2 {
			bad("expect.chain: each entry is [before, after]")
			continue
		}
		known("expect.chain", pair[0])
		known("expect.chain", pair[1])
	}
	for _, list := range [][]string{s.Expect.Action, s.Expect.ForbidActions} {
		for _, a := range list {
			if !slices.Contains(actions, a) {
				bad("unknown action %q (one of %s)", a, strings.Join(actions, ", "))
			}
		}
	}
	for _, e := range s.Expect.End {
		if e != "reply" && e != "ask_user" {
			bad("expect.end must be reply or ask_user, got %q", e)
		}
	}
	for i, f := range s.Attachments {
		if strings.TrimSpace(f.Name) == "" || path.Base(f.Name) != f.Name {
			bad("attachments[%d]: a file name without a directory", i)
		}
	}
}

func (s Situation) checkWorker(bad func(string, ...any)) {
	if !caseName.MatchString(s.Role.Name) {
		bad("role.name %q must be a-z, 0-9 and -", s.Role.Name)
	}
	if strings.TrimSpace(s.Instruction) == "" {
		bad("instruction is empty")
	}
	for _, name := range s.Role.Tools {
		if _, ok := s.Tools[name]; !ok && name != fetchURL {
			bad("role.tools: %q has no entry in tools", name)
		}
	}
	if st := s.Expect.Status; st != "" && st != "done" && st != "blocked" && st != "need_info" {
		bad("expect.status must be done, blocked or need_info, got %q", st)
	}
}

// DefaultTeam is the team of a master situation that names none: the
// roles callon gives a new team (master.DefaultRoles).
func DefaultTeam() []RoleDef {
	var out []RoleDef
	for _, r := range master.DefaultRoles() {
		out = append(out, RoleDef{Name: r.Name, Description: r.Description, Prompt: r.Prompt})
	}
	return out
}

// File is where the situation was read from.
func (s Situation) File() string { return filepath.ToSlash(s.file) }
