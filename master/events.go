package master

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/callonbot/callon/internal/proc"
)

// DescribeSignal says in a few words what a signal means, for people:
// "planner finished", "researcher asks: which city?". Payload text is
// shortened to one line; a payload it cannot read is named by its kind.
func DescribeSignal(s Signal) string {
	var p struct {
		Worker   string `json:"worker"`
		Attempt  int    `json:"attempt"`
		Percent  int    `json:"percent"`
		Note     string `json:"note"`
		State    string `json:"state"`
		Error    string `json:"error"`
		Reason   string `json:"reason"`
		Question string `json:"question"`
		To       string `json:"to"`
		Delivery string `json:"delivery"`
		Event    string `json:"event"`
		Status   int    `json:"status"`
		Done     bool   `json:"delivered"`
		Failed   bool   `json:"failed"`
		Thread   string `json:"from_thread"`
		Tool     string `json:"tool"`
		Args     string `json:"args"`
		OK       bool   `json:"ok"`
		Millis   int64  `json:"duration_ms"`
		Size     int    `json:"size"`
	}
	_ = json.Unmarshal(s.Payload, &p)
	who := "**" + s.Role + "**"
	if s.Role == "" {
		who = "a member"
	}
	switch s.Kind {
	case SignalAck:
		if p.Attempt > 1 {
			return fmt.Sprintf("%s started (attempt %d)", who, p.Attempt)
		}
		return who + " started"
	case SignalProgress:
		return fmt.Sprintf("%s at %d%%%s", who, p.Percent, withText(": ", p.Note, 60))
	case SignalTaskComplete:
		switch TaskState(p.State) {
		case TaskDone:
			return who + " finished"
		case TaskTimeout:
			return who + " timed out"
		case TaskCancelled:
			return who + "'s task was cancelled" + withText(": ", p.Error, 60)
		default:
			return who + " failed" + withText(": ", p.Error, 60)
		}
	case SignalBlocked:
		return who + " is blocked" + withText(": ", p.Reason, 60)
	case SignalNeedInfo:
		return who + " asks" + withText(": ", p.Question, 60)
	case SignalHandoff:
		return fmt.Sprintf("%s handed over to **%s**", who, p.To)
	case SignalTool:
		call := ToolName(p.Tool) + ArgsText(p.Args)
		if !p.OK {
			return fmt.Sprintf("%s called %s: failed%s", who, call, withText(": ", p.Error, 60))
		}
		return fmt.Sprintf("%s called %s (%s, %s)", who, call, Elapsed(time.Duration(p.Millis)*time.Millisecond), proc.ByteSize(p.Size))
	case SignalNeedApproval:
		return fmt.Sprintf("%s waits for approval to call %s%s", who, ToolName(p.Tool), ArgsText(p.Args))
	case SignalReport:
		if p.Thread != "" {
			return fmt.Sprintf("a report came from <#%s>", p.Thread)
		}
		if p.To != "" {
			return fmt.Sprintf("a report went to <#%s>", p.To)
		}
		return "a report"
	case SignalReviewPassed, SignalReviewRevised:
		return describeReview(s)
	case SignalWebhook:
		switch {
		case p.Done:
			return fmt.Sprintf("webhook %s delivered", p.Event)
		case p.Failed:
			return fmt.Sprintf("webhook %s given up (HTTP %d)", p.Event, p.Status)
		default:
			return fmt.Sprintf("webhook %s failed (HTTP %d), retrying", p.Event, p.Status)
		}
	}
	return string(s.Kind)
}

// ArgsText is a call's arguments after its tool's name, as code, or ""
// for none.
func ArgsText(args string) string {
	if args = ShortArgs(args, 60); args == "" || args == "{}" {
		return ""
	}
	return " " + CodeSpan(args)
}

// withText is sep and text on one line, shortened, or "" for no text.
func withText(sep, text string, max int) string {
	if text == "" {
		return ""
	}
	return sep + oneLine(text, max)
}
