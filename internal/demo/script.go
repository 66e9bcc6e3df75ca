package demo

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/callonbot/callon/llm/llmfake"
)

// Model is the name the demo's model answers to, for the master and the
// workers alike.
const Model = "callon-demo"

// Footer ends every answer of the coordinator: the demo never passes a
// script's words off as a model's.
const Footer = "\n\n-# 🎭 Scripted demo: no AI model wrote this. Run `callon chat` without --demo to use yours."

// question is what the coordinator asks before planning a launch; its
// answer is recognised by this question in the conversation.
const question = "Which market should the launch reach first: **Europe** or **the US**?"

// author is how the master writes a message's author before its text.
var author = regexp.MustCompile(`^<@[^>]*>(?: \(a bot\))?: `)

// Script answers the team's model calls: pace is how long each answer
// takes (0 in tests), so the status block has something to show.
func Script(pace time.Duration) llmfake.Script {
	return func(req llmfake.Request) llmfake.Reply {
		r := answer(req)
		if pace > 0 {
			r = llmfake.Delay(pace, r)
		}
		return r
	}
}

func answer(req llmfake.Request) llmfake.Reply {
	system := req.System()
	if strings.HasPrefix(system, "You are the coordinator") {
		return coordinator(req)
	}
	for _, role := range []string{"researcher", "planner", "writer", "engineer"} {
		if strings.HasPrefix(system, "You are the "+role+" ") {
			return worker(role, req)
		}
	}
	return llmfake.Text("This demo model only plays the demo team's parts." + Footer)
}

// mentionsUS says whether a lower-cased answer names the US: as a word
// ("because" is not "us").
func mentionsUS(low string) bool {
	for _, w := range strings.FieldsFunc(low, func(r rune) bool { return !unicode.IsLetter(r) }) {
		switch w {
		case "us", "usa", "america", "american", "states":
			return true
		}
	}
	return false
}

// coordinator is the master: a menu, a question before a plan, a fan-out
// once it is answered, the dice for a tool, and a merge of results.
func coordinator(req llmfake.Request) llmfake.Reply {
	if results := req.ToolResults(); len(results) > 0 {
		return merge(results[len(results)-1].Content)
	}
	msg := strings.TrimSpace(author.ReplaceAllString(req.LastUser(), ""))
	low := strings.ToLower(msg)
	switch {
	case askedBefore(req):
		market := "Europe"
		if mentionsUS(low) {
			market = "the US"
		}
		return llmfake.Call("delegate", map[string]any{"tasks": []map[string]any{
			{"role": "researcher", "instruction": "Find what matters to early customers in " + market + "."},
			{"role": "planner", "instruction": "Draft a four-week launch timeline for " + market + "."},
			{"role": "writer", "instruction": "Write a two-line launch announcement for " + market + ", from the findings and the timeline.", "depends_on": []int{0, 1}},
		}})
	case strings.Contains(low, "dice") || strings.Contains(low, "roll") || strings.Contains(low, "tool"):
		return llmfake.Call("delegate", map[string]any{"tasks": []map[string]any{
			{"role": "engineer", "instruction": "Roll two six-sided dice with the demo tool and report what came up."},
		}})
	case strings.Contains(low, "plan") || strings.Contains(low, "launch"):
		return llmfake.Call("ask_user", map[string]any{"question": "Happy to plan it with the team. " + question + Footer})
	default:
		return llmfake.Call("reply", map[string]any{"text": menu(msg)})
	}
}

// askedBefore reports whether the coordinator's last answer was the
// demo's question: this message answers it.
func askedBefore(req llmfake.Request) bool {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == "assistant" {
			return strings.Contains(m.Content, question)
		}
	}
	return false
}

func menu(msg string) string {
	greeting := "Hello! "
	if msg != "" && !strings.HasPrefix(strings.ToLower(msg), "h") {
		greeting = "Noted. "
	}
	return greeting + "I'm the coordinator of this demo team: every message comes to me, and I answer or hand work to the team. Try:\n" +
		"- **plan a launch**: I ask you one question, then three teammates work at once, the writer after the other two\n" +
		"- **roll the dice**: the engineer asks to use a tool, and waits for you to approve it\n" +
		"- `/team` shows who is doing what; `/dissolve` ends the team" + Footer
}

// merge is the coordinator's one reply with a round's results.
func merge(results string) llmfake.Reply {
	if strings.Contains(results, "engineer:") {
		return llmfake.Call("reply", map[string]any{"text": "The engineer used the demo tool:\n\n" + body(results, "engineer") + Footer})
	}
	text := "Here is the launch plan the team put together.\n\n" +
		"**What customers care about** (researcher)\n" + body(results, "researcher") + "\n\n" +
		"**Timeline** (planner)\n" + body(results, "planner") + "\n\n" +
		"**Announcement** (writer)\n" + body(results, "writer") + Footer
	return llmfake.Call("reply", map[string]any{"text": text})
}

// body is a role's result in a round's results ("[n] role: state\n…").
func body(results, role string) string {
	i := strings.Index(results, "] "+role+": ")
	if i < 0 {
		return "_(no result)_"
	}
	rest := results[i:]
	if nl := strings.Index(rest, "\n"); nl >= 0 {
		rest = rest[nl+1:]
	} else {
		return "_(no result)_"
	}
	if end := strings.Index(rest, "\n\n["); end >= 0 {
		rest = rest[:end]
	}
	return strings.TrimSpace(rest)
}

// worker plays one role; the planner reports progress on the way, the
// engineer calls the demo tool first.
func worker(role string, req llmfake.Request) llmfake.Reply {
	instruction := req.LastUser()
	switch role {
	case "researcher":
		return report("1. They want to try it before they pay.\n2. They compare it with what they use now.\n3. They trust what peers say more than ads.")
	case "planner":
		if len(req.ToolResults()) == 0 {
			return llmfake.Call("progress", map[string]any{"percent": 50, "note": "drafting the weeks"})
		}
		return report("- Week 1: invite 50 early users\n- Week 2: fix what they hit\n- Week 3: open the waitlist\n- Week 4: launch day, with the announcement")
	case "writer":
		return report("📣 It's here: try it free for a month, and bring a friend.")
	case "engineer":
		results := req.ToolResults()
		if len(results) == 0 {
			return llmfake.Call(ToolName, map[string]any{"dice": 2, "sides": 6})
		}
		return report(fmt.Sprintf("The tool said: %s", strings.TrimSpace(results[len(results)-1].Content)))
	}
	return report("Done: " + instruction)
}

func report(result string) llmfake.Reply {
	return llmfake.Call("report", map[string]any{"status": "done", "result": result})
}
