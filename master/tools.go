package master

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Master tool names: a contract operators write prompts against.
const (
	ToolReply    = "reply"
	ToolDelegate = "delegate"
	ToolAskUser  = "ask_user"
	ToolReplan   = "replan"
	// ToolAnswerWorker answers a worker that needs information; offered
	// only while a task of the round waits for an answer.
	ToolAnswerWorker = "answer_worker"
)

// MaxInstructionLen bounds one task's instruction.
const MaxInstructionLen = 8000

// decisionEnv is what a decision is checked against.
type decisionEnv struct {
	roster    []Role
	maxTasks  int
	maxRoles  int
	mustReply bool
	round     []Task // the current round's tasks, in the order the master sees them
	reportTo  string // the session's report_to; report_back is offered when set
	callback  bool   // the session has a callback URL; report_back is offered too
	dispatch  bool   // dispatch is offered
	// attachments are the files of the turn's message; the stored ones
	// may be handed to tasks by name.
	attachments []Attachment
	// memory offers remember and forget; notes are the channel's notes
	// the master was shown (forget names one of them).
	memory bool
	notes  []Note
	// personas offers reply's exchange between the team's members.
	personas bool
}

// waiting lists the round's tasks that wait for an answer.
func (e decisionEnv) waiting() []int {
	var idx []int
	for i, t := range e.round {
		if t.Question() != "" {
			idx = append(idx, i)
		}
	}
	return idx
}

// decision is a validated master tool call.
type decision struct {
	tool     string
	task     int64     // answer_worker: the task answered
	text     string    // reply text, question, or answer to a worker
	tasks    []NewTask // delegate
	roles    []Role    // replan: names and descriptions
	reason   string    // replan
	callID   string
	rawInput string
	channel  string // dispatch
	goal     string // dispatch
	note     int64  // forget: the note
	// exchange is a reply presented as a short exchange between the
	// team's members (personas), after text, the coordinator's part.
	exchange []Line
}

// masterTool is one tool of the master: when it is offered, the schema
// the model sees, and how its arguments become a decision. Each tool's
// schema and parser sit side by side, in this file or beside the feature
// it belongs to (hand-back).
type masterTool struct {
	name    string
	offered func(e decisionEnv) bool // nil: always
	schema  func(e decisionEnv) Tool
	// parse validates the arguments; its errors are written for the
	// model, which sees them once, for a retry.
	parse func(args string, e decisionEnv) (decision, error)
}

// masterToolset is every master tool, in the order they are offered.
var masterToolset = []masterTool{replyTool, delegateTool, askUserTool, replanMasterTool, reportBackTool, dispatchTool, answerWorkerTool,
	rememberTool, forgetTool}

// masterTools returns the tools the master may call this step. When
// mustReply is set (the round limit is reached), reply is the only one.
func masterTools(e decisionEnv) []Tool {
	var tools []Tool
	for _, t := range masterToolset {
		if (e.mustReply && t.name != ToolReply) || (t.offered != nil && !t.offered(e)) {
			continue
		}
		tools = append(tools, t.schema(e))
	}
	return tools
}

// parseDecision validates one tool call against the team and the limits.
// Its error is written for the model: it is sent back for one retry.
func parseDecision(call ToolCall, e decisionEnv) (decision, error) {
	if e.mustReply && call.Name != ToolReply {
		return decision{tool: call.Name}, fmt.Errorf("only %s is available now: reply with what you have", ToolReply)
	}
	i := slices.IndexFunc(masterToolset, func(t masterTool) bool { return t.name == call.Name })
	if i < 0 {
		var names []string
		for _, t := range masterTools(e) {
			names = append(names, t.Name)
		}
		return decision{tool: call.Name}, fmt.Errorf("there is no tool %q; use one of: %s", call.Name, strings.Join(names, ", "))
	}
	d, err := masterToolset[i].parse(call.Arguments, e)
	d.tool, d.callID, d.rawInput = call.Name, call.ID, call.Arguments
	return d, err
}

// DecodeArgs decodes a tool call's arguments strictly: unknown fields are
// refused, so a model learns the shape instead of having its intent
// silently dropped. Its errors are written for the model.
func DecodeArgs(args string, v any) error {
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("arguments are not valid JSON for this tool: %v", err)
	}
	if rest := strings.TrimSpace(args[dec.InputOffset():]); rest != "" {
		return fmt.Errorf("arguments have text after the JSON object: %q", Truncate(rest, 40))
	}
	return nil
}

// schema encodes a tool's JSON schema, which is static data.
func schema(v map[string]any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("master tool schema: %v", err)) // static data; cannot happen
	}
	return b
}

// object is the JSON schema of an object with exactly these properties.
func object(required []string, props map[string]any) map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "required": required, "properties": props}
}

// text decodes one required, non-empty string argument.
func textArg(args, field, tool string) (string, error) {
	var a map[string]*string
	if err := DecodeArgs(args, &a); err != nil {
		return "", err
	}
	for k := range a {
		if k != field {
			return "", fmt.Errorf("arguments are not valid JSON for this tool: json: unknown field %q", k)
		}
	}
	v := a[field]
	if v == nil || strings.TrimSpace(*v) == "" {
		return "", fmt.Errorf("%s needs a non-empty %q", tool, field)
	}
	return strings.TrimSpace(*v), nil
}

var replyTool = masterTool{
	name: ToolReply,
	schema: func(e decisionEnv) Tool {
		props := map[string]any{
			"text": map[string]any{"type": "string", "description": "The message to post, in " + markdownKind + "."},
		}
		if e.personas {
			props["exchange"] = exchangeSchema(e)
		}
		return Tool{
			Name:        ToolReply,
			Description: "Answer the user in the thread. This ends your turn. Merge every worker result you use into one coherent answer.",
			Parameters:  schema(object([]string{"text"}, props)),
		}
	},
	parse: func(args string, e decisionEnv) (decision, error) {
		var a struct {
			Text     *string `json:"text"`
			Exchange []Line  `json:"exchange"`
		}
		if err := DecodeArgs(args, &a); err != nil {
			return decision{}, err
		}
		if a.Text == nil || strings.TrimSpace(*a.Text) == "" {
			return decision{}, fmt.Errorf("%s needs a non-empty %q", ToolReply, "text")
		}
		exchange, err := parseExchange(a.Exchange, e)
		return decision{text: strings.TrimSpace(*a.Text), exchange: exchange}, err
	},
}

var askUserTool = masterTool{
	name: ToolAskUser,
	schema: func(decisionEnv) Tool {
		return Tool{
			Name:        ToolAskUser,
			Description: "Ask the user a question you need answered before going on. Their next message continues the work.",
			Parameters:  schema(object([]string{"question"}, map[string]any{"question": map[string]any{"type": "string"}})),
		}
	},
	parse: func(args string, _ decisionEnv) (decision, error) {
		q, err := textArg(args, "question", ToolAskUser)
		return decision{text: q}, err
	},
}

var delegateTool = masterTool{
	name: ToolDelegate,
	schema: func(e decisionEnv) Tool {
		item := map[string]any{
			"role":        map[string]any{"type": "string", "enum": RoleNames(e.roster)},
			"instruction": map[string]any{"type": "string", "description": "A self-contained instruction: the worker sees the goal, this and its dependencies' results, nothing else."},
			"depends_on": map[string]any{
				"type":        "array",
				"items":       map[string]any{"type": "integer", "minimum": 0},
				"description": "Indexes (0-based) of earlier tasks in this list whose results this task needs.",
			},
		}
		if names := attachmentNames(e.attachments); len(names) > 0 {
			item["attachments"] = map[string]any{
				"type":        "array",
				"items":       map[string]any{"type": "string", "enum": names},
				"description": "Files of the user's message this task needs, by name: the worker sees them as you do.",
			}
		}
		return Tool{
			Name: ToolDelegate,
			Description: "Give subtasks to team members. Tasks without depends_on run in parallel; a task with depends_on " +
				"starts after those tasks are done and receives their results. You are called again with every result.",
			Parameters: schema(object([]string{"tasks"}, map[string]any{
				"tasks": map[string]any{
					"type":     "array",
					"minItems": 1,
					"maxItems": e.maxTasks,
					"items":    object([]string{"role", "instruction"}, item),
				},
			})),
		}
	},
	parse: func(args string, e decisionEnv) (decision, error) {
		var d decision
		var a struct {
			Tasks []struct {
				Role        string   `json:"role"`
				Instruction string   `json:"instruction"`
				DependsOn   []int    `json:"depends_on"`
				Attachments []string `json:"attachments"`
			} `json:"tasks"`
		}
		if err := DecodeArgs(args, &a); err != nil {
			return d, err
		}
		if len(a.Tasks) == 0 {
			return d, fmt.Errorf("delegate needs at least one task")
		}
		if len(a.Tasks) > e.maxTasks {
			return d, fmt.Errorf("delegate takes at most %d tasks per round, got %d", e.maxTasks, len(a.Tasks))
		}
		names := RoleNames(e.roster)
		for i, t := range a.Tasks {
			if !slices.Contains(names, t.Role) {
				return d, fmt.Errorf("tasks[%d].role %q is not on the team; use one of: %s", i, t.Role, strings.Join(names, ", "))
			}
			instr := strings.TrimSpace(t.Instruction)
			if instr == "" {
				return d, fmt.Errorf("tasks[%d].instruction is empty", i)
			}
			if len(instr) > MaxInstructionLen {
				return d, fmt.Errorf("tasks[%d].instruction is longer than %d characters", i, MaxInstructionLen)
			}
			deps := slices.Clone(t.DependsOn)
			slices.Sort(deps)
			deps = slices.Compact(deps)
			for _, dep := range deps {
				if dep < 0 || dep >= i {
					return d, fmt.Errorf("tasks[%d].depends_on has %d: it may only name earlier tasks (0 to %d)", i, dep, i-1)
				}
			}
			files, err := attachmentIDs(t.Attachments, e.attachments)
			if err != nil {
				return d, fmt.Errorf("tasks[%d].attachments: %w", i, err)
			}
			d.tasks = append(d.tasks, NewTask{Role: t.Role, Instruction: instr, DependsOn: deps, Attachments: files})
		}
		return d, nil
	},
}

var answerWorkerTool = masterTool{
	name:    ToolAnswerWorker,
	offered: func(e decisionEnv) bool { return len(e.waiting()) > 0 },
	schema: func(e decisionEnv) Tool {
		return Tool{
			Name: ToolAnswerWorker,
			Description: "Answer a team member who asked a question (need_info) from what you know; its task resumes " +
				"with your answer. If only the user knows, use ask_user instead: their reply goes to the member.",
			Parameters: schema(object([]string{"task", "answer"}, map[string]any{
				"task":   map[string]any{"type": "integer", "enum": e.waiting(), "description": "The [number] of the task in the round's results."},
				"answer": map[string]any{"type": "string"},
			})),
		}
	},
	parse: func(args string, e decisionEnv) (decision, error) {
		var d decision
		var a struct {
			Task   *int    `json:"task"`
			Answer *string `json:"answer"`
		}
		if err := DecodeArgs(args, &a); err != nil {
			return d, err
		}
		waiting := e.waiting()
		if a.Task == nil || !slices.Contains(waiting, *a.Task) {
			return d, fmt.Errorf("answer_worker needs \"task\": the number of a task that asked a question (%v)", waiting)
		}
		if a.Answer == nil || strings.TrimSpace(*a.Answer) == "" {
			return d, fmt.Errorf("answer_worker needs a non-empty \"answer\"")
		}
		d.task, d.text = e.round[*a.Task].ID, strings.TrimSpace(*a.Answer)
		return d, nil
	},
}

// attachmentIDs maps the names of files the master hands to a task to
// their ids; an unknown name, or one of a file that was not read, is an
// error for the model.
func attachmentIDs(names []string, atts []Attachment) ([]int64, error) {
	var ids []int64
	for _, n := range names {
		i := slices.IndexFunc(atts, func(a Attachment) bool { return a.Readable() && strings.EqualFold(a.Name, n) })
		if i < 0 {
			if readable := attachmentNames(atts); len(readable) > 0 {
				return nil, fmt.Errorf("%q is not a file of the message you can hand over; use one of: %s", n, strings.Join(readable, ", "))
			}
			return nil, fmt.Errorf("%q: the message has no file you can hand over", n)
		}
		if !slices.Contains(ids, atts[i].ID) {
			ids = append(ids, atts[i].ID)
		}
	}
	return ids, nil
}
