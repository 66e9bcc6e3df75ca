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
	dispatch  bool   // dispatch is offered
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

// masterTools returns the tools the master may call this step. When
// mustReply is set (the round limit or the token budget is reached), reply
// is the only one.
func masterTools(e decisionEnv) []Tool {
	roster, maxTasks, maxRoles, mustReply := e.roster, e.maxTasks, e.maxRoles, e.mustReply
	reply := Tool{
		Name:        ToolReply,
		Description: "Answer the user in the thread. This ends your turn. Merge every worker result you use into one coherent answer.",
		Parameters: schema(map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []string{"text"},
			"properties": map[string]any{
				"text": map[string]any{"type": "string", "description": "The message to post, in Discord Markdown."},
			},
		}),
	}
	if mustReply {
		return []Tool{reply}
	}
	tools := []Tool{
		reply,
		{
			Name: ToolDelegate,
			Description: "Give subtasks to team members. Tasks without depends_on run in parallel; a task with depends_on " +
				"starts after those tasks are done and receives their results. You are called again with every result.",
			Parameters: schema(map[string]any{
				"type":                 "object",
				"additionalProperties": false,
				"required":             []string{"tasks"},
				"properties": map[string]any{
					"tasks": map[string]any{
						"type":     "array",
						"minItems": 1,
						"maxItems": maxTasks,
						"items": map[string]any{
							"type":                 "object",
							"additionalProperties": false,
							"required":             []string{"role", "instruction"},
							"properties": map[string]any{
								"role":        map[string]any{"type": "string", "enum": RoleNames(roster)},
								"instruction": map[string]any{"type": "string", "description": "A self-contained instruction: the worker sees the goal, this and its dependencies' results, nothing else."},
								"depends_on": map[string]any{
									"type":        "array",
									"items":       map[string]any{"type": "integer", "minimum": 0},
									"description": "Indexes (0-based) of earlier tasks in this list whose results this task needs.",
								},
							},
						},
					},
				},
			}),
		},
		{
			Name:        ToolAskUser,
			Description: "Ask the user a question you need answered before going on. Their next message continues the work.",
			Parameters: schema(map[string]any{
				"type":                 "object",
				"additionalProperties": false,
				"required":             []string{"question"},
				"properties": map[string]any{
					"question": map[string]any{"type": "string"},
				},
			}),
		},
		replanTool(maxRoles),
	}
	if e.reportTo != "" {
		tools = append(tools, reportBackTool(e.reportTo))
	}
	if e.dispatch {
		tools = append(tools, dispatchTool)
	}
	if waiting := e.waiting(); len(waiting) > 0 {
		tools = append(tools, Tool{
			Name: ToolAnswerWorker,
			Description: "Answer a team member who asked a question (need_info) from what you know; its task resumes " +
				"with your answer. If only the user knows, use ask_user instead: their reply goes to the member.",
			Parameters: schema(map[string]any{
				"type":                 "object",
				"additionalProperties": false,
				"required":             []string{"task", "answer"},
				"properties": map[string]any{
					"task":   map[string]any{"type": "integer", "enum": waiting, "description": "The [number] of the task in the round's results."},
					"answer": map[string]any{"type": "string"},
				},
			}),
		})
	}
	return tools
}

func schema(v map[string]any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("master tool schema: %v", err)) // static data; cannot happen
	}
	return b
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
}

// parseDecision validates one tool call against the team and the limits.
// Its error is written for the model: it is sent back for one retry.
func parseDecision(call ToolCall, e decisionEnv) (decision, error) {
	roster, maxTasks, maxRoles, mustReply := e.roster, e.maxTasks, e.maxRoles, e.mustReply
	d := decision{tool: call.Name, callID: call.ID, rawInput: call.Arguments}
	if mustReply && call.Name != ToolReply {
		return d, fmt.Errorf("only %s is available now: reply with what you have", ToolReply)
	}
	switch call.Name {
	case ToolReply:
		var a struct {
			Text *string `json:"text"`
		}
		if err := DecodeArgs(call.Arguments, &a); err != nil {
			return d, err
		}
		if a.Text == nil || strings.TrimSpace(*a.Text) == "" {
			return d, fmt.Errorf("reply needs a non-empty \"text\"")
		}
		d.text = strings.TrimSpace(*a.Text)
	case ToolAskUser:
		var a struct {
			Question *string `json:"question"`
		}
		if err := DecodeArgs(call.Arguments, &a); err != nil {
			return d, err
		}
		if a.Question == nil || strings.TrimSpace(*a.Question) == "" {
			return d, fmt.Errorf("ask_user needs a non-empty \"question\"")
		}
		d.text = strings.TrimSpace(*a.Question)
	case ToolDelegate:
		var a struct {
			Tasks []struct {
				Role        string `json:"role"`
				Instruction string `json:"instruction"`
				DependsOn   []int  `json:"depends_on"`
			} `json:"tasks"`
		}
		if err := DecodeArgs(call.Arguments, &a); err != nil {
			return d, err
		}
		if len(a.Tasks) == 0 {
			return d, fmt.Errorf("delegate needs at least one task")
		}
		if len(a.Tasks) > maxTasks {
			return d, fmt.Errorf("delegate takes at most %d tasks per round, got %d", maxTasks, len(a.Tasks))
		}
		names := RoleNames(roster)
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
			d.tasks = append(d.tasks, NewTask{Role: t.Role, Instruction: instr, DependsOn: deps})
		}
	case ToolReplan:
		var a struct {
			Roles []struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"roles"`
			Reason string `json:"reason"`
		}
		if err := DecodeArgs(call.Arguments, &a); err != nil {
			return d, err
		}
		for _, r := range a.Roles {
			d.roles = append(d.roles, Role{Name: strings.TrimSpace(r.Name), Description: strings.TrimSpace(r.Description)})
		}
		if err := CheckRoster(d.roles, maxRoles); err != nil {
			return d, err
		}
		d.reason = strings.TrimSpace(a.Reason)
	case ToolReportBack:
		if e.reportTo == "" {
			return d, fmt.Errorf("this team reports nowhere: report_back is not available")
		}
		var err error
		if d.text, err = parseReportBack(call.Arguments); err != nil {
			return d, err
		}
	case ToolDispatch:
		if !e.dispatch {
			return d, fmt.Errorf("dispatch is not available to this team")
		}
		var err error
		if d.channel, d.goal, err = parseDispatch(call.Arguments); err != nil {
			return d, err
		}
	case ToolAnswerWorker:
		var a struct {
			Task   *int    `json:"task"`
			Answer *string `json:"answer"`
		}
		if err := DecodeArgs(call.Arguments, &a); err != nil {
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
	default:
		return d, fmt.Errorf("there is no tool %q; use one of: reply, delegate, ask_user, replan", call.Name)
	}
	return d, nil
}

// replanTool is the replan tool: the roles listed become the roster.
func replanTool(maxRoles int) Tool {
	return Tool{
		Name: ToolReplan,
		Description: "Change the team: the roles listed become the whole roster (existing names keep their prompt). " +
			"Your turn continues afterwards.",
		Parameters: schema(map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []string{"roles", "reason"},
			"properties": map[string]any{
				"roles": map[string]any{
					"type":     "array",
					"minItems": 1,
					"maxItems": maxRoles,
					"items": map[string]any{
						"type":                 "object",
						"additionalProperties": false,
						"required":             []string{"name", "description"},
						"properties": map[string]any{
							"name":        map[string]any{"type": "string", "pattern": "^[a-z][a-z0-9_-]{0,31}$"},
							"description": map[string]any{"type": "string"},
						},
					},
				},
				"reason": map[string]any{"type": "string"},
			},
		}),
	}
}
