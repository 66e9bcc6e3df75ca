package master

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Bounds that keep the master's context small however long a session runs.
const (
	maxHistoryChars = 1500 // one message or answer in the recent history
	maxResultChars  = 4000 // one worker result shown to the master
	maxSummaryLines = 20   // older exchanges condensed into the summary
)

// turnContext is everything the master sees for one decision.
type turnContext struct {
	session   Session
	roster    []Role
	history   []Exchange // finished turns before this one, oldest first
	recent    int        // how many of history are shown verbatim
	turn      Turn
	tasks     []Task // this turn's tasks, every round so far
	maxRounds int
	mustReply string // why only reply is allowed now; "" otherwise
	// attachments are the files of the turn's message; vision says the
	// master's model is given images.
	attachments []Attachment
	vision      bool
	// instructions replace MasterInstructions when set.
	instructions string
	// tracks are the roster's records in the channel (see RoleTrack).
	tracks map[string]RoleTrack
	// memory says the team reads and writes its channel's notes; notes
	// are all of them, shownNotes those the prompt shows (see
	// memoryNote).
	memory            bool
	notes, shownNotes []Note
}

// MasterInstructions is how the master works, in its system prompt after
// the goal and the team; OrchestratorConfig.Instructions replaces it (the
// goal, the team, the limits and the history stay callon's).
const MasterInstructions = `How you work:
- Every message in the thread comes to you first, and only you post in it. Decide with one tool call:
  reply (answer directly: for simple questions, or to merge results), delegate (subtasks for team
  members), ask_user (a question only the user can answer), replan (change the team, then go on).
- Delegate when a specialist would do better. Independent tasks run in parallel; give a task
  depends_on when it needs another task's result. Instructions must stand alone: a member sees
  the goal, its instruction and its dependencies' results, not this conversation.
- When results come back, reply once: merge them into one clear answer for the user. Do not paste
  raw results, do not mention internal task numbers, and never invent results you do not have.
  If a task failed, work around it or say what is missing.`

// masterMessages builds the bounded chat context for one master decision:
// the goal, the roster, a summary of older exchanges, the recent ones
// verbatim, the user's message, and this turn's rounds with their results.
func masterMessages(c turnContext) []Message {
	var older []Exchange
	recent := c.history
	if n := len(c.history); n > c.recent {
		older, recent = c.history[:n-c.recent], c.history[n-c.recent:]
	}
	msgs := []Message{{Role: RoleSystem, Content: masterSystemPrompt(c, older)}}
	for _, e := range recent {
		msgs = append(msgs, Message{Role: RoleUser, Content: userLine(e.AuthorID, e.AuthorBot, Truncate(e.Message, maxHistoryChars))})
		answer := Truncate(e.Answer, maxHistoryChars)
		if e.Asked && len(e.Results) > 0 {
			answer += "\n\n(Results gathered before this question:)\n" + formatResults(e.Results)
		}
		if answer != "" { // a message that answered workers has no answer of its own
			msgs = append(msgs, Message{Role: RoleAssistant, Content: answer})
		}
	}
	msgs = append(msgs, c.userMessage())
	if note := addressedNote(c.turn.AddressedTo, c.roster); note != "" {
		msgs = append(msgs, Message{Role: RoleSystem, Content: note})
	}
	for round := 1; round <= c.turn.Round; round++ {
		tasks := roundTasks(c.tasks, round)
		id := "round-" + strconv.Itoa(round)
		msgs = append(msgs,
			Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: id, Name: ToolDelegate, Arguments: delegateArgs(tasks, c.attachments)}}},
			Message{Role: RoleTool, ToolCallID: id, Content: fmt.Sprintf("Round %d of %d has ended. Results:\n\n%s", round, c.maxRounds, formatResults(tasks))},
		)
	}
	if c.mustReply != "" {
		msgs = append(msgs, Message{Role: RoleSystem, Content: c.mustReply + " Call reply now with the best answer the results allow, and say plainly what is missing."})
	}
	return msgs
}

// userMessage is the turn's message: its text, then its files.
func (c turnContext) userMessage() Message {
	m := Message{Role: RoleUser, Content: userLine(c.turn.AuthorID, c.turn.AuthorBot, c.turn.Content)}
	if len(c.attachments) == 0 {
		return m
	}
	if strings.TrimSpace(c.turn.Content) == "" {
		m.Content = userLine(c.turn.AuthorID, c.turn.AuthorBot, "(no text: only files)")
	}
	files, images := RenderAttachments(c.attachments, c.vision)
	m.Content += "\n\n" + files
	m.Images = images
	return m
}

// roundTasks are one round's tasks, in the order the master sees them.
func roundTasks(tasks []Task, round int) []Task {
	var out []Task
	for _, t := range tasks {
		if t.Round == round {
			out = append(out, t)
		}
	}
	return out
}

// roundTasks are the current round's tasks.
func (c turnContext) roundTasks() []Task { return roundTasks(c.tasks, c.turn.Round) }

// How the models are told where their team lives: every prompt's words
// for the platform are here.
const (
	inThread     = "a Discord thread"
	threadStyle  = "Write for Discord: concise, Markdown, no @everyone or @here."
	markdownKind = "Discord Markdown"
	markdownTone = "Discord-friendly Markdown"
)

func masterSystemPrompt(c turnContext, older []Exchange) string {
	var b strings.Builder
	where, style := inThread, threadStyle
	if c.session.Surface == SurfaceTerminal {
		where, style = "a terminal chat", "Write for a terminal: concise Markdown."
	}
	fmt.Fprintf(&b, "You are the coordinator of a team working in %s on this goal:\n%s\n\n", where, c.session.Goal)
	b.WriteString("Your team:\n")
	for _, r := range c.roster {
		fmt.Fprintf(&b, "- %s: %s%s\n", r.Name, r.Description, ToolsLine(" (tools: ", r.Tools)+closing(r.Tools))
	}
	b.WriteString(reliabilityNote(c.roster, c.tracks, &c.turn, c.tasks))
	b.WriteString(memoryNote(c))
	b.WriteString("\n" + strings.TrimSpace(cmp.Or(c.instructions, MasterInstructions)) + "\n")
	fmt.Fprintf(&b, "- You may delegate at most %d rounds for one message; then you must reply.\n", c.maxRounds)
	b.WriteString("- " + style + "\n")
	if len(c.attachments) > 0 {
		b.WriteString("- The user's message comes with files, listed after it. A member sees only the files you hand it\n" +
			"  (the attachments of its task in delegate). If a file was not read, tell the user in your reply.\n")
	}
	if len(older) > 0 {
		if len(older) > maxSummaryLines {
			older = older[len(older)-maxSummaryLines:]
		}
		b.WriteString("\nEarlier in this thread (summary):\n")
		for _, e := range older {
			fmt.Fprintf(&b, "- user: %s → team: %s\n", oneLine(e.Message, 150), oneLine(e.Answer, 200))
		}
	}
	return b.String()
}

// userLine is a message as the master reads it, its author named; a
// trusted bot's is marked as a bot's.
func userLine(authorID string, bot bool, content string) string {
	switch {
	case authorID == "":
		return content
	case bot:
		return fmt.Sprintf("<@%s> (a bot, not a person): %s", authorID, content)
	}
	return fmt.Sprintf("<@%s>: %s", authorID, content)
}

// delegateArgs reconstructs a round's delegate call from its task rows, so
// the model sees its own earlier decision next to the results.
func delegateArgs(tasks []Task, atts []Attachment) string {
	type item struct {
		Role        string   `json:"role"`
		Instruction string   `json:"instruction"`
		DependsOn   []int    `json:"depends_on,omitempty"`
		Attachments []string `json:"attachments,omitempty"`
	}
	names := make(map[int64]string, len(atts))
	for _, a := range atts {
		names[a.ID] = a.Name
	}
	index := make(map[int64]int, len(tasks))
	items := make([]item, 0, len(tasks))
	for i, t := range tasks {
		index[t.ID] = i
		it := item{Role: t.Role, Instruction: Truncate(t.Instruction, maxHistoryChars)}
		for _, d := range t.DependsOn {
			if j, ok := index[d]; ok {
				it.DependsOn = append(it.DependsOn, j)
			}
		}
		for _, id := range t.Attachments {
			if n, ok := names[id]; ok {
				it.Attachments = append(it.Attachments, n)
			}
		}
		items = append(items, it)
	}
	b, _ := json.Marshal(map[string]any{"tasks": items})
	return string(b)
}

// formatResults lists tasks with their outcome, each result bounded.
func formatResults(tasks []Task) string {
	var b strings.Builder
	for i, t := range tasks {
		fmt.Fprintf(&b, "[%d] %s: %s", i, t.Role, t.State)
		for _, qa := range t.QA {
			if qa.Answer != "" {
				fmt.Fprintf(&b, " (asked %q, answered %q)", Truncate(qa.Question, 300), Truncate(qa.Answer, 300))
			}
		}
		switch t.State {
		case TaskDone:
			fmt.Fprintf(&b, "\n%s\n\n", Truncate(strings.TrimSpace(t.Result), maxResultChars))
		case TaskNeedInfo:
			fmt.Fprintf(&b, ", it asks: %s\n", Truncate(t.Question(), maxResultChars))
			if t.Result != "" {
				fmt.Fprintf(&b, "(its work so far: %s)\n", Truncate(t.Result, maxResultChars))
			}
			b.WriteString("\n")
		case TaskBlocked:
			fmt.Fprintf(&b, ", blocked: %s\n\n", Truncate(t.Result, maxResultChars))
		default:
			if t.Error != "" {
				fmt.Fprintf(&b, " (%s)", Truncate(t.Error, 500))
			}
			b.WriteString("\n\n")
		}
	}
	return strings.TrimSpace(b.String())
}

// closing closes the parenthesis ToolsLine opened for a role's tools.
func closing(tools []string) string {
	if len(tools) == 0 {
		return ""
	}
	return ")"
}
