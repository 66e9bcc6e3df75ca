package dashboard

import (
	"fmt"
	"strconv"
	"time"

	"github.com/callonbot/callon/master"
)

// timeline is a turn as a Gantt chart: one row per master step, task,
// tool call and approval, each bar placed in percent of the turn's span
// (drawn as SVG by the template, with presentation attributes only: no
// inline style, which the CSP forbids).
type timeline struct {
	Turn     master.Turn
	Start    time.Time
	Span     time.Duration
	Open     bool // the turn is still running: its bars grow
	Rows     []row
	Tokens   int64 // the tasks' tokens
	Answered string
}

// row is one line of the chart.
type row struct {
	Label  string
	Indent bool // a tool call or approval under its task
	Bars   []bar
	Note   string // duration, tokens, size
	Class  string
}

// bar is a span on a row, in percent of the chart's width.
type bar struct {
	X, W  string
	Class string
	Title string
}

// layout places a turn's steps, tasks, tool calls and approvals on one
// time axis, from the message to the reply (or now, while it runs).
// The master's steps are the gaps the rows show: from the message (or a
// round's end) to the next round's tasks (or the reply).
func layout(l TurnLine, now time.Time) timeline {
	t := timeline{Turn: l.Turn, Start: l.Turn.CreatedAt}
	open := l.Turn.State == master.TurnRunning || l.Turn.State == master.TurnQueued
	t.Open = open
	end := l.Turn.CreatedAt
	stretch := func(at time.Time) {
		if at.After(end) {
			end = at
		}
	}
	for _, tk := range l.Tasks {
		stretch(tk.CreatedAt)
		stretch(tk.EndedAt)
		stretch(tk.StartedAt)
		t.Tokens += tk.Usage.Total()
	}
	for _, c := range l.Calls {
		stretch(c.EndedAt)
	}
	for _, a := range l.Approvals {
		stretch(a.DecidedAt)
	}
	stretch(l.QueuedAt)
	stretch(l.RepliedAt)
	if open || (!l.QueuedAt.IsZero() && l.RepliedAt.IsZero()) {
		stretch(now)
	}
	t.Span = max(end.Sub(t.Start), time.Second)
	pos := func(from, to time.Time) (string, string) {
		if to.Before(from) {
			to = from
		}
		x := 100 * float64(from.Sub(t.Start)) / float64(t.Span)
		w := max(100*float64(to.Sub(from))/float64(t.Span), 0.6)
		x = min(max(x, 0), 99.4)
		w = min(w, 100-x)
		return strconv.FormatFloat(x, 'f', 2, 64), strconv.FormatFloat(w, 'f', 2, 64)
	}
	mk := func(from, to time.Time, class, title string) bar {
		x, w := pos(from, to)
		return bar{X: x, W: w, Class: class, Title: title}
	}

	// The master's steps: message → round 1, round k's end → round k+1,
	// the last round's end → the reply.
	rounds := 0
	for _, tk := range l.Tasks {
		rounds = max(rounds, tk.Round)
	}
	steps := row{Label: "master", Class: "master", Note: fmt.Sprintf("%d model calls", l.Turn.MasterCalls)}
	from := l.Turn.CreatedAt
	for r := 1; r <= rounds+1; r++ {
		var to time.Time
		var roundEnd time.Time
		done := true
		for _, tk := range l.Tasks {
			if tk.Round != r {
				continue
			}
			if to.IsZero() || tk.CreatedAt.Before(to) {
				to = tk.CreatedAt
			}
		}
		if r == rounds+1 {
			to = l.QueuedAt
		}
		if to.IsZero() {
			if open {
				to = now
			} else {
				break
			}
		}
		steps.Bars = append(steps.Bars, mk(from, to, "step", fmt.Sprintf("master step %d: %s", r, dur(to.Sub(from)))))
		for _, tk := range l.Tasks {
			if tk.Round != r {
				continue
			}
			if tk.EndedAt.IsZero() {
				done = false
			}
			if tk.EndedAt.After(roundEnd) {
				roundEnd = tk.EndedAt
			}
		}
		if !done || roundEnd.IsZero() {
			break
		}
		from = roundEnd
	}
	t.Rows = append(t.Rows, steps)

	for _, tk := range l.Tasks {
		r := row{Label: fmt.Sprintf("r%d %s", tk.Round, tk.Role), Class: stateClass(tk.State)}
		started := tk.StartedAt
		ended := tk.EndedAt
		if ended.IsZero() && !tk.State.Terminal() {
			ended = now
		}
		switch {
		case started.IsZero():
			r.Bars = append(r.Bars, mk(tk.CreatedAt, orNow(tk.EndedAt, now), "queued", fmt.Sprintf("%s: %s, queued", tk.Role, tk.State)))
			r.Note = string(tk.State)
		default:
			r.Bars = append(r.Bars, mk(tk.CreatedAt, started, "queued", fmt.Sprintf("%s: waited %s for a worker", tk.Role, dur(started.Sub(tk.CreatedAt)))))
			r.Bars = append(r.Bars, mk(started, ended, "task "+stateClass(tk.State),
				fmt.Sprintf("%s: %s in %s, %s tokens", tk.Role, tk.State, dur(ended.Sub(started)), master.Tokens(tk.Usage.Total()))))
			r.Note = fmt.Sprintf("%s · %s · %s tokens", tk.State, dur(ended.Sub(started)), master.Tokens(tk.Usage.Total()))
		}
		t.Rows = append(t.Rows, r)
		for _, c := range l.Calls {
			if c.TaskID != tk.ID || c.StartedAt.IsZero() {
				continue
			}
			class, what := "call", "ok"
			if c.IsError {
				class, what = "call bad", "error"
			}
			cr := row{Label: c.Name, Indent: true, Class: "call"}
			cr.Bars = append(cr.Bars, mk(c.StartedAt, orNow(c.EndedAt, now), class, fmt.Sprintf("%s: %s, %s, %d bytes", c.Name, what, dur(c.Duration), c.Size)))
			cr.Note = fmt.Sprintf("%s · %s · %d B", what, dur(c.Duration), c.Size)
			t.Rows = append(t.Rows, cr)
		}
		for _, a := range l.Approvals {
			if a.TaskID != tk.ID {
				continue
			}
			ar := row{Label: "approval: " + a.Tool, Indent: true, Class: "approval"}
			decided := orNow(a.DecidedAt, now)
			ar.Bars = append(ar.Bars, mk(a.CreatedAt, decided, "approval "+stateClass(a.State),
				fmt.Sprintf("approval of %s: %s after %s", a.Tool, a.State, dur(decided.Sub(a.CreatedAt)))))
			ar.Note = fmt.Sprintf("%s · %s", a.State, dur(decided.Sub(a.CreatedAt)))
			t.Rows = append(t.Rows, ar)
		}
	}
	if !l.QueuedAt.IsZero() {
		posted := row{Label: "posting", Class: "post"}
		sent := orNow(l.RepliedAt, now)
		posted.Bars = append(posted.Bars, mk(l.QueuedAt, sent, "post", "the reply: queued to posted in "+dur(sent.Sub(l.QueuedAt))))
		posted.Note = dur(sent.Sub(l.QueuedAt))
		t.Rows = append(t.Rows, posted)
		if !l.RepliedAt.IsZero() {
			t.Answered = dur(l.RepliedAt.Sub(l.Turn.CreatedAt))
		}
	}
	return t
}

func orNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}

// dur is a short duration: "850 ms", "12.3 s", "4 m 05 s".
func dur(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	}
	return master.Elapsed(d)
}
