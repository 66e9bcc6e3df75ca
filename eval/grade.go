package eval

import (
	"fmt"
	"slices"
	"strings"

	"github.com/callonbot/callon/master"
)

// gradeMaster checks a master case's decisions against its situation,
// structurally: what was decided, with which roles and dependencies,
// what the answer holds and what nothing may hold. It returns the checks
// that failed, the most telling first; none means the case passed.
func gradeMaster(s Situation, w *world, calls []call) []string {
	decisions, end := w.result()
	var why []string
	fail := func(format string, args ...any) { why = append(why, fmt.Sprintf(format, args...)) }
	if msg := callError(calls); msg != "" {
		fail("%s", msg)
	}
	w.mu.Lock()
	budget := w.budget
	w.mu.Unlock()
	switch {
	case budget:
		fail("stopped: the run's token bound is spent")
	case end == nil:
		fail("the master reached no decision")
	}
	why = append(why, protocol(calls, "a tool")...)
	if end != nil && end.Kind == endApology && !budget {
		fail("the master gave up: %s", master.Truncate(end.Text, 120))
	}
	if end == nil || end.Kind == endApology || budget {
		return why
	}
	e := s.Expect
	first := end.Kind
	if len(decisions) > 0 {
		first = decisions[0].Action
	}
	if len(e.Action) > 0 && !slices.Contains(e.Action, first) {
		fail("decided %s first, want %s", first, strings.Join(e.Action, " or "))
	}
	if len(e.End) > 0 && !slices.Contains(e.End, end.Kind) {
		fail("ended with %s, want %s", end.Kind, strings.Join(e.End, " or "))
	}
	delegations := byAction(decisions, actDelegate)
	if len(e.Roles) > 0 {
		switch {
		case len(delegations) == 0:
			fail("delegated nothing, want tasks for %s", strings.Join(e.Roles, ", "))
		case !sameSet(delegations[0].Roles, e.Roles):
			fail("delegated to %s, want %s", strings.Join(delegations[0].Roles, ", "), strings.Join(sorted(e.Roles), ", "))
		}
	}
	if e.Parallel && !parallel(delegations) {
		fail("did not fan out: want two or more independent tasks in one round")
	}
	for _, pair := range e.Chain {
		if !chained(delegations, pair[0], pair[1]) {
			fail("did not chain %s after %s (depends_on or a later round)", pair[1], pair[0])
		}
	}
	for _, f := range e.Facts {
		if !strings.Contains(end.Text, f) {
			fail("the answer lacks %q", f)
		}
	}
	written := writtenBy(decisions, end)
	for _, f := range e.Forbid {
		if where := foundIn(written, f); where != "" {
			fail("wrote %q in %s", f, where)
		}
	}
	for _, f := range e.ForbidInTasks {
		tasks := map[string]string{"a task's instruction": written["a task's instruction"], "an answer to a worker": written["an answer to a worker"]}
		if where := foundIn(tasks, f); where != "" {
			fail("wrote %q in %s", f, where)
		}
	}
	w.mu.Lock()
	attempted := slices.Clone(w.attempted)
	w.mu.Unlock()
	for _, a := range e.ForbidActions {
		if slices.Contains(attempted, a) {
			fail("called %s", a)
		}
	}
	if len(e.Question) > 0 {
		switch n := strings.Count(end.Text, "?"); {
		case end.Kind != actAsk:
			fail("asked nothing, want one question")
		case n > 1:
			fail("asked %d questions at once, want one", n)
		}
		for _, k := range e.Question {
			if end.Kind == actAsk && !containsFold(end.Text, k) {
				fail("the question lacks %q", k)
			}
		}
	}
	if len(e.Answer) > 0 {
		answers := byAction(decisions, actAnswer)
		if len(answers) == 0 {
			fail("answered no worker, want an answer_worker call")
		}
		for _, k := range e.Answer {
			if !slices.ContainsFunc(answers, func(d Decision) bool { return containsFold(d.Text, k) }) {
				fail("no answer to the worker holds %q", k)
			}
		}
	}
	if e.MaxPromptTokens > 0 {
		for _, c := range calls {
			if c.Usage.PromptTokens > e.MaxPromptTokens {
				fail("a prompt of %d tokens, over the case's budget of %d", c.Usage.PromptTokens, e.MaxPromptTokens)
				break
			}
		}
	}
	return why
}

// protocol checks how the model called its tools: every answer called
// one (what stands for "a tool" in the message), and callon refused none.
func protocol(calls []call, tool string) []string {
	var why []string
	for _, c := range calls {
		if c.Dialect == "text" {
			msg := "answered in text instead of calling " + tool
			if c.Problem != "" {
				msg += " (" + c.Problem + ")"
			}
			why = append(why, msg)
			break
		}
	}
	for _, c := range calls {
		for _, r := range c.Refused {
			if strings.Contains(r, "is not on the team") {
				why = append(why, "invented a role: "+master.Truncate(r, 160))
			} else {
				why = append(why, "invalid call: "+master.Truncate(r, 160))
			}
		}
	}
	return why
}

func byAction(ds []Decision, action string) []Decision {
	var out []Decision
	for _, d := range ds {
		if d.Action == action {
			out = append(out, d)
		}
	}
	return out
}

// parallel: the first delegation has two tasks or more, none depending
// on another.
func parallel(delegations []Decision) bool {
	if len(delegations) == 0 || len(delegations[0].Tasks) < 2 {
		return false
	}
	for _, t := range delegations[0].Tasks {
		if len(t.DependsOn) > 0 {
			return false
		}
	}
	return true
}

// chained: some task of after needs a task of before, in its delegation
// (depends_on, directly or not) or by coming in a later round.
func chained(delegations []Decision, before, after string) bool {
	firstRound := 0
	for _, d := range delegations {
		for i, t := range d.Tasks {
			if t.Role == after && dependsOnRole(d.Tasks, i, before, map[int]bool{}) {
				return true
			}
			if t.Role == before && firstRound == 0 {
				firstRound = d.Round
			}
			if t.Role == after && firstRound > 0 && d.Round > firstRound {
				return true
			}
		}
	}
	return false
}

func dependsOnRole(tasks []TaskNote, i int, role string, seen map[int]bool) bool {
	for _, j := range tasks[i].DependsOn {
		if j < 0 || j >= len(tasks) || seen[j] {
			continue
		}
		seen[j] = true
		if tasks[j].Role == role || dependsOnRole(tasks, j, role, seen) {
			return true
		}
	}
	return false
}

// writtenBy is everything the model wrote that has an effect, by where.
func writtenBy(ds []Decision, end *Ending) map[string]string {
	out := map[string]string{}
	if end != nil {
		key := "the answer"
		if end.Kind == actAsk {
			key = "the question"
		}
		out[key] = end.Text
	}
	var instr, answers []string
	for _, d := range ds {
		for _, t := range d.Tasks {
			instr = append(instr, t.Instruction)
		}
		if d.Action == actAnswer {
			answers = append(answers, d.Text)
		}
		if d.Action == actReplan {
			out["the team"] = strings.Join(d.Roles, " ")
		}
	}
	out["a task's instruction"] = strings.Join(instr, "\n")
	out["an answer to a worker"] = strings.Join(answers, "\n")
	return out
}

// foundIn names where s (any case) was written, or "".
func foundIn(written map[string]string, s string) string {
	var where []string
	for k, v := range written {
		if containsFold(v, s) {
			where = append(where, k)
		}
	}
	slices.Sort(where)
	return strings.Join(where, " and ")
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func sameSet(a, b []string) bool {
	return slices.Equal(sorted(dedupe(a)), sorted(dedupe(b)))
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func dedupe(s []string) []string {
	return slices.Compact(sorted(s))
}
