package render

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/callonbot/callon/master"
)

// Status is the status message of a running turn.
func Status(ts master.TurnStatus, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s **Team at work** · round %d · %s\n", statusWorking, ts.Turn.Round, master.Elapsed(now.Sub(ts.StartedAt)))
	for _, t := range currentRound(ts) {
		fmt.Fprintf(&b, "• **%s** — %s", t.Role, stateLabel(t.State))
		if p, ok := ts.Progress[t.ID]; ok && t.State == master.TaskRunning {
			fmt.Fprintf(&b, " · %d%%", p.Percent)
			if p.Note != "" {
				fmt.Fprintf(&b, " %s", oneLine(p.Note, 80))
			}
		}
		b.WriteString(activity(ts.Calls, t))
		switch {
		case !t.EndedAt.IsZero() && !t.StartedAt.IsZero():
			fmt.Fprintf(&b, " · %s", master.Elapsed(t.EndedAt.Sub(t.StartedAt)))
		case t.State == master.TaskRunning && !t.StartedAt.IsZero():
			fmt.Fprintf(&b, " · %s", master.Elapsed(now.Sub(t.StartedAt)))
		}
		b.WriteString("\n")
	}
	return master.Truncate(strings.TrimSpace(b.String()), master.MaxMessageLen)
}

// statusWorking starts the status message of a turn at work, and only it.
const statusWorking = "⏳"

// IsSettled reports whether a status message's text is settled (its
// turn has ended: Settled), for a surface that shows the status in
// place until then.
func IsSettled(text string) bool { return !strings.HasPrefix(text, statusWorking) }

// Settled is the status message once its turn has ended, with the
// tokens its team has used so far and, when prices give it, their cost.
func Settled(ts master.TurnStatus, prices master.Prices) string {
	roles := make([]string, 0, len(ts.Tasks))
	seen := map[string]bool{}
	for _, t := range ts.Tasks {
		if !seen[t.Role] {
			seen[t.Role] = true
			roles = append(roles, t.Role)
		}
	}
	team := fmt.Sprintf("%d %s by %s", len(ts.Tasks), plural(len(ts.Tasks), "task", "tasks"), strings.Join(roles, ", "))
	if used := master.SumUsage(ts.Spent).Total(); used > 0 {
		team += " · team total " + master.Tokens(used) + " tokens"
		if c := prices.Cost(ts.Spent).String(); c != "" {
			team += " " + c
		}
	}
	switch ts.Turn.State {
	case master.TurnDone:
		end := cmp.Or(ts.RepliedAt, ts.Turn.UpdatedAt)
		return master.Truncate(fmt.Sprintf("✅ Done in %s · %s", master.Elapsed(end.Sub(ts.StartedAt)), team), master.MaxMessageLen)
	case master.TurnWaiting:
		return master.Truncate("❓ Waiting for your answer · "+team, master.MaxMessageLen)
	default:
		return master.Truncate("⏹️ Stopped · "+team, master.MaxMessageLen)
	}
}

// activity is the tool call a running task is making, or a paused one
// waits to make: " · fetch_url `{…}`", or "".
func activity(calls map[int64]master.ToolActivity, t master.Task) string {
	c, ok := calls[t.ID]
	if !ok || (t.State != master.TaskRunning && t.State != master.TaskApproval) {
		return ""
	}
	return " · " + master.ToolName(c.Tool) + master.ArgsText(c.Args)
}

func currentRound(ts master.TurnStatus) []master.Task {
	var out []master.Task
	for _, t := range ts.Tasks {
		if t.Round == ts.Turn.Round {
			out = append(out, t)
		}
	}
	return out
}

func stateLabel(s master.TaskState) string {
	switch s {
	case master.TaskQueued:
		return "queued"
	case master.TaskRunning:
		return "working"
	case master.TaskDone:
		return "done ✓"
	case master.TaskNeedInfo:
		return "needs info"
	case master.TaskApproval:
		return "waits for approval"
	case master.TaskTimeout:
		return "timed out"
	default:
		return string(s)
	}
}

// oneLine is s on one line, at most max characters.
func oneLine(s string, max int) string {
	return master.Truncate(strings.Join(strings.Fields(s), " "), max)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
