package workers

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/callonbot/callon/master"
)

// Worker tool names: a contract role prompts may refer to.
const (
	ToolReport   = "report"
	ToolProgress = "progress"
	ToolHandoff  = "handoff"
)

// maxNoteChars bounds a progress note: it is shown in a status line.
const maxNoteChars = 200

// workerTools are the tools every worker is offered.
var workerTools = []master.Tool{
	{
		Name: ToolReport,
		Description: "Finish your task. Call it once, with your complete result; nothing you write reaches " +
			"anyone until you do.",
		Parameters: json.RawMessage(`{
			"type": "object",
			"additionalProperties": false,
			"required": ["status", "result"],
			"properties": {
				"status": {
					"type": "string",
					"enum": ["done", "blocked", "need_info"],
					"description": "done: the task is finished. blocked: you cannot do it. need_info: you need an answer only the user can give."
				},
				"result": {
					"type": "string",
					"description": "done: your complete, self-contained result. blocked: why you cannot do it. need_info: what you have so far (may be empty)."
				},
				"question": {
					"type": "string",
					"description": "need_info only: the question for the user."
				}
			}
		}`),
	},
	{
		Name:        ToolProgress,
		Description: "Tell the team how far along you are, during long work. It does not end your task.",
		Parameters: json.RawMessage(`{
			"type": "object",
			"additionalProperties": false,
			"required": ["percent", "note"],
			"properties": {
				"percent": {"type": "integer", "minimum": 0, "maximum": 100},
				"note": {"type": "string", "maxLength": 200, "description": "What you are doing now, in a few words."}
			}
		}`),
	},
}

// report is a validated report call.
type report struct {
	state    master.TaskState // done, blocked or need_info
	result   string
	question string
}

// outcome is the task's end as the store records it.
func (r report) outcome() master.Outcome {
	return master.Outcome{State: r.state, Result: r.result, Question: r.question}
}

// tools returns the tools a worker is offered: report and progress, and
// handoff when the team has other roles to hand off to.
func tools(team []master.Role) []master.Tool {
	if len(team) == 0 {
		return workerTools
	}
	names := make([]string, len(team))
	for i, r := range team {
		names[i] = r.Name
	}
	enum, _ := json.Marshal(names)
	return append(slices.Clip(workerTools), master.Tool{
		Name: ToolHandoff,
		Description: "Pass the rest of the work to another member of the team, with what you found so far. " +
			"It ends your task; the other member receives your result and your instruction.",
		Parameters: json.RawMessage(`{
			"type": "object",
			"additionalProperties": false,
			"required": ["role", "instruction"],
			"properties": {
				"role": {"type": "string", "enum": ` + string(enum) + `},
				"instruction": {"type": "string", "description": "What the other member should do: self-contained."},
				"result": {"type": "string", "description": "What you have done so far, passed on with the work."}
			}
		}`),
	})
}

// parseHandoff validates handoff arguments against the team.
func parseHandoff(args string, team []master.Role) (master.Outcome, error) {
	var a struct {
		Role        *string `json:"role"`
		Instruction *string `json:"instruction"`
		Result      *string `json:"result"`
	}
	if err := master.DecodeArgs(args, &a); err != nil {
		return master.Outcome{}, err
	}
	if a.Role == nil || !slices.ContainsFunc(team, func(r master.Role) bool { return r.Name == *a.Role }) {
		names := make([]string, len(team))
		for i, r := range team {
			names[i] = r.Name
		}
		return master.Outcome{}, fmt.Errorf(`"role" must be one of: %s`, strings.Join(names, ", "))
	}
	if a.Instruction == nil || strings.TrimSpace(*a.Instruction) == "" {
		return master.Outcome{}, errors.New(`"instruction" is required: say what the other member should do`)
	}
	result := ""
	if a.Result != nil {
		result = strings.TrimSpace(*a.Result)
	}
	instr := strings.TrimSpace(*a.Instruction)
	return master.Outcome{
		State:   master.TaskDone,
		Result:  cmp.Or(result, "(handed off to "+*a.Role+": "+master.Truncate(instr, 200)+")"),
		Handoff: &master.Handoff{Role: *a.Role, Instruction: instr},
	}, nil
}

// parseReport validates report arguments. Its errors are written for
// the model: they are sent back for one retry.
func parseReport(args string) (report, error) {
	var a struct {
		Status   *string `json:"status"`
		Result   *string `json:"result"`
		Question *string `json:"question"`
	}
	if err := master.DecodeArgs(args, &a); err != nil {
		return report{}, err
	}
	if a.Status == nil {
		return report{}, errors.New(`"status" is missing: use "done", "blocked" or "need_info"`)
	}
	r := report{state: master.TaskState(*a.Status)}
	switch r.state {
	case master.TaskDone, master.TaskBlocked, master.TaskNeedInfo:
	default:
		return report{}, fmt.Errorf(`"status" is %q: use "done", "blocked" or "need_info"`, *a.Status)
	}
	if a.Result == nil {
		return report{}, errors.New(`"result" is missing`)
	}
	r.result = strings.TrimSpace(*a.Result)
	if a.Question != nil {
		r.question = strings.TrimSpace(*a.Question)
	}
	switch {
	case r.state == master.TaskDone && r.result == "":
		return report{}, errors.New(`"result" is empty: put your complete result in it`)
	case r.state == master.TaskBlocked && r.result == "":
		return report{}, errors.New(`"result" is empty: say why you are blocked`)
	case r.state == master.TaskNeedInfo && r.question == "":
		return report{}, errors.New(`"question" is required with status "need_info": ask what you need to know`)
	}
	return r, nil
}

// progress is a validated progress call.
type progress struct {
	percent int
	note    string
}

// parseProgress validates progress arguments. A long note is cut rather
// than refused: it is only a status line.
func parseProgress(args string) (progress, error) {
	var a struct {
		Percent *int    `json:"percent"`
		Note    *string `json:"note"`
	}
	if err := master.DecodeArgs(args, &a); err != nil {
		return progress{}, err
	}
	switch {
	case a.Percent == nil:
		return progress{}, errors.New(`"percent" is missing`)
	case *a.Percent < 0 || *a.Percent > 100:
		return progress{}, fmt.Errorf(`"percent" is %d: use an integer from 0 to 100`, *a.Percent)
	case a.Note == nil:
		return progress{}, errors.New(`"note" is missing`)
	}
	note := master.Truncate(strings.Join(strings.Fields(*a.Note), " "), maxNoteChars)
	return progress{percent: *a.Percent, note: note}, nil
}
