package workers

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/callonbot/callon/master"
)

// maxDepChars bounds one dependency's result in a worker's context, so the
// context stays bounded however much the earlier tasks wrote.
const maxDepChars = 6000

// workerInstructions close every worker's system prompt.
const workerInstructions = `How you work:
- The team's coordinator gave you one task. Do it, then call report once: status "done" with your complete result.
- The coordinator merges your result with the others' into one answer, so make it self-contained: do not refer to "above", to earlier messages or to your tools.
- If you cannot do the task, report status "blocked" with the reason as the result. If you need an answer only the user can give, report status "need_info" with your question in "question".
- For long work, call progress now and then with a percent and a short note; it does not end your task.
- If another member of the team should do the rest, call handoff (when offered) with their role, an instruction and what you have so far.
- You cannot talk to the user: only your report reaches the team.`

// toolsInstructions close the system prompt of a worker whose role has
// tools of its own.
const toolsInstructions = `
- You also have tools of your own (the functions besides report, progress and handoff): call them when they help, several times if need be. What they return is for you only: put what matters in your report.`

// messages is the whole context of a task's first model call. The files
// handed to the task follow its instruction as the master saw them: text
// bounded, images as image parts when vision is set, notes otherwise.
// withTools says the role is offered tools of its own; notice names those
// that are unavailable ("" when none is).
func messages(t master.Task, in TaskInput, vision, withTools bool, notice string) []master.Message {
	user := master.Message{Role: master.RoleUser, Content: userMessage(t, in.Deps)}
	if len(in.Attachments) > 0 {
		files, images := master.RenderAttachments(in.Attachments, vision)
		user.Content += "\n\n" + files
		user.Images = images
	}
	return []master.Message{{Role: master.RoleSystem, Content: systemPrompt(t, in, withTools, notice)}, user}
}

// systemPrompt names the role and the goal, then gives the role's own
// prompt and how to use the tools. It never shows the other roles.
func systemPrompt(t master.Task, in TaskInput, withTools bool, notice string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are the %s of a team working on: %s\n\n", cmp.Or(in.Role.Name, t.Role), strings.TrimSpace(in.Goal))
	if p := strings.TrimSpace(in.Role.Prompt); p != "" {
		b.WriteString(p)
		b.WriteString("\n\n")
	}
	if notes := master.NotesSection(in.Notes); notes != "" {
		b.WriteString(notes + "\n")
	}
	b.WriteString(workerInstructions)
	if withTools {
		b.WriteString(toolsInstructions)
	}
	if notice != "" {
		b.WriteString("\n\n" + notice)
	}
	return b.String()
}

// userMessage is the instruction, then each dependency's result headed
// with its role and task id.
func userMessage(t master.Task, deps []master.Task) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(t.Instruction))
	for _, qa := range t.QA {
		if qa.Answer == "" {
			continue
		}
		fmt.Fprintf(&b, "\n\nYou asked: %s\nThe answer: %s", strings.TrimSpace(qa.Question), strings.TrimSpace(qa.Answer))
	}
	if len(t.QA) > 0 && t.Result != "" {
		fmt.Fprintf(&b, "\n\nWhat you had done before asking:\n%s", master.Truncate(strings.TrimSpace(t.Result), maxDepChars))
	}
	if len(deps) == 0 {
		return b.String()
	}
	b.WriteString("\n\nResults of the tasks yours builds on:")
	for _, d := range deps {
		text := strings.TrimSpace(d.Result)
		if d.State == master.TaskDone {
			fmt.Fprintf(&b, "\n\n### %s (task #%d)\n", d.Role, d.ID)
		} else {
			// Claims wait for done dependencies; this is a safety net.
			fmt.Fprintf(&b, "\n\n### %s (task #%d, %s)\n", d.Role, d.ID, d.State)
			text = cmp.Or(strings.TrimSpace(d.Error), text)
		}
		b.WriteString(cmp.Or(master.Truncate(text, maxDepChars), "(no result)"))
	}
	return b.String()
}
