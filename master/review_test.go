package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

// reviewFake keeps one turn's review in memory, logging its writes into
// the orchestrator fake's log.
type reviewFake struct {
	f      *orchFake
	review *Review
}

func (r *reviewFake) TurnReview(context.Context, int64) (Review, error) {
	if r.review == nil {
		return Review{}, ErrNotFound
	}
	return *r.review, nil
}

func (r *reviewFake) StartReview(_ context.Context, _ Guard, rv Review) error {
	r.f.note("draft: %s", rv.Draft)
	r.review = &rv
	return nil
}

func (r *reviewFake) DecideReview(_ context.Context, _ Guard, rv Review) error {
	kind, _ := ReviewSignal(rv)
	r.f.note("verdict %s %s (%s)", rv.Verdict, rv.State, kind)
	r.review = &rv
	return nil
}

func TestReviewBeforeTheReply(t *testing.T) {
	t.Parallel()
	done := []Task{{ID: 3, Round: 1, Role: "researcher", State: TaskDone, Result: "95 moons"}}
	merge := call("reply", `{"text":"41 moons"}`)
	tests := []struct {
		name    string
		mode    ReviewMode
		round   int
		tasks   []Task
		pending *Review
		replies []func() (ChatResponse, error)
		want    []string
	}{
		{name: "passed", mode: ReviewOn, round: 1, tasks: done,
			replies: []func() (ChatResponse, error){merge, call("verdict", `{"decision":"pass"}`)},
			want:    []string{"draft: 41 moons", "verdict pass done (REVIEW_PASSED)", "finish reply done: 41 moons"}},
		{name: "a caveat under the reply", mode: ReviewOn, round: 1, tasks: done,
			replies: []func() (ChatResponse, error){merge, call("verdict", `{"decision":"caveat","caveat":"Counts change as moons are found."}`)},
			want: []string{"draft: 41 moons", "verdict caveat done (REVIEW_PASSED)",
				"finish reply done: 41 moons\n\n> ⚠️ **Reviewer's note:** Counts change as moons are found."}},
		{name: "sent back once: the revision is posted", mode: ReviewOn, round: 1, tasks: done,
			replies: []func() (ChatResponse, error){merge, call("verdict", `{"decision":"revise","objections":["the results say 95"]}`),
				call("reply", `{"text":"95 moons"}`)},
			want: []string{"draft: 41 moons", "verdict revise revising (REVIEW_REVISED)", "finish reply done: 95 moons"}},
		{name: "the reviewer fails: posted unreviewed", mode: ReviewOn, round: 1, tasks: done,
			replies: []func() (ChatResponse, error){merge, fails(errors.New("connection refused"))},
			want:    []string{"draft: 41 moons", "verdict skipped done (REVIEW_PASSED)", "finish reply done: 41 moons"}},
		{name: "no usable verdict: posted unreviewed", mode: ReviewOn, round: 1, tasks: done,
			replies: []func() (ChatResponse, error){merge, call("verdict", `{"decision":"revise"}`)},
			want:    []string{"draft: 41 moons", "verdict skipped done (REVIEW_PASSED)", "finish reply done: 41 moons"}},
		{name: "the revision fails: the draft with the objections", mode: ReviewOn, round: 1, tasks: done,
			replies: []func() (ChatResponse, error){merge, call("verdict", `{"decision":"revise","objections":["the results say 95"]}`),
				fails(errors.New("connection refused"))},
			want: []string{"draft: 41 moons", "verdict revise revising (REVIEW_REVISED)",
				"finish reply done: 41 moons\n\n> ⚠️ **Reviewer's note:** A reviewer raised: the results say 95"}},
		{name: "a direct answer is not reviewed when review is on", mode: ReviewOn,
			replies: []func() (ChatResponse, error){call("reply", `{"text":"hi"}`)},
			want:    []string{"finish reply done: hi"}},
		{name: "it is when review is always", mode: ReviewAlways,
			replies: []func() (ChatResponse, error){call("reply", `{"text":"hi"}`), call("verdict", `{"decision":"pass"}`)},
			want:    []string{"draft: hi", "verdict pass done (REVIEW_PASSED)", "finish reply done: hi"}},
		{name: "a question is never reviewed", mode: ReviewAlways,
			replies: []func() (ChatResponse, error){call("ask_user", `{"question":"which planet?"}`)},
			want:    []string{"finish question waiting: which planet?"}},
		{name: "a draft left by a step that died is reviewed, not decided again", mode: ReviewOn, round: 1, tasks: done,
			pending: &Review{TurnID: 7, Draft: "41 moons", State: ReviewReviewing},
			replies: []func() (ChatResponse, error){call("verdict", `{"decision":"pass"}`)},
			want:    []string{"verdict pass done (REVIEW_PASSED)", "finish reply done: 41 moons"}},
		{name: "a verdict left by a step that died is acted on without a call", mode: ReviewOn, round: 1, tasks: done,
			pending: &Review{TurnID: 7, Draft: "41 moons", State: ReviewDone, Verdict: VerdictCaveat, Caveat: "Uncertain."},
			want:    []string{"finish reply done: 41 moons\n\n> ⚠️ **Reviewer's note:** Uncertain."}},
		{name: "a revision left undone is made once", mode: ReviewOn, round: 1, tasks: done,
			pending: &Review{TurnID: 7, Draft: "41 moons", State: ReviewRevising, Verdict: VerdictRevise, Objections: []string{"95"}},
			replies: []func() (ChatResponse, error){call("reply", `{"text":"95 moons"}`)},
			want:    []string{"finish reply done: 95 moons"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &orchFake{
				turn:   Turn{ID: 7, SessionID: 1, State: TurnRunning, Round: tt.round, AuthorID: "u", Content: "How many moons?"},
				tasks:  tt.tasks,
				sess:   Session{ID: 1, Goal: "space", State: SessionActive, Features: Features{Review: tt.mode}},
				roster: DefaultRoles(),
			}
			rf := &reviewFake{f: f, review: tt.pending}
			llm := &scriptLLM{replies: tt.replies}
			o := NewOrchestrator(OrchestratorConfig{Owner: "p", Model: "m", MaxRounds: 3, Retries: 2, RetryDelay: time.Millisecond, Reviews: rf},
				f, llm, slog.New(slog.DiscardHandler))
			o.Step(t.Context(), 1)
			if !slices.Equal(f.log, tt.want) {
				t.Errorf("store calls:\n got  %q\n want %q", f.log, tt.want)
			}
			if len(llm.replies) > 0 {
				t.Errorf("%d scripted replies were never asked for", len(llm.replies))
			}
			if n := len(llm.offered); n != f.turn.MasterCalls {
				t.Errorf("%d model calls, %d counted on the turn: every call of the review is counted", n, f.turn.MasterCalls)
			}
		})
	}
}

func TestParseVerdictBounds(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 2*maxObjectionLen)
	var many []string
	for i := range 9 {
		many = append(many, fmt.Sprintf(`"objection %d"`, i))
	}
	r, err := parseVerdict(ToolCall{Name: ToolVerdict, Arguments: `{"decision":"revise","objections":["` + long + `",` + strings.Join(many, ",") + `]}`})
	if err != nil || len(r.Objections) != maxObjections || len([]rune(r.Objections[0])) > maxObjectionLen {
		t.Errorf("parseVerdict = %d objections (%d characters), %v; want at most %d, bounded", len(r.Objections), len(r.Objections[0]), err, maxObjections)
	}
	for _, bad := range []string{`{"decision":"maybe"}`, `{"decision":"caveat"}`, `{"decision":"pass","extra":1}`} {
		if _, err := parseVerdict(ToolCall{Name: ToolVerdict, Arguments: bad}); err == nil {
			t.Errorf("parseVerdict(%s) accepted", bad)
		}
	}
	if _, err := parseVerdict(ToolCall{Name: "reply", Arguments: `{"text":"x"}`}); err == nil {
		t.Error("a call of another tool is a verdict")
	}
}
