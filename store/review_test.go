package store_test

import (
	"errors"
	"testing"

	"github.com/callonbot/callon/master"
)

// A draft is saved once per turn, under the guard; its verdict once,
// with its signal; both read back whole.
func TestReviewRows(t *testing.T) {
	t.Parallel()
	w := setup(t)
	g, sess := w.guarded("p1")
	draft := master.Review{Draft: "41 moons", Exchange: []master.Line{{Member: "researcher", Text: "I counted."}}}
	stale := g
	stale.Owner = "p2"
	if err := w.store.StartReview(w.ctx, stale, draft); !errors.Is(err, master.ErrStale) {
		t.Errorf("StartReview under a stale guard: %v, want ErrStale", err)
	}
	if err := w.store.StartReview(w.ctx, g, draft); err != nil {
		t.Fatal(err)
	}
	r, err := w.store.TurnReview(w.ctx, g.TurnID)
	if err != nil || r.State != master.ReviewReviewing || r.Draft != "41 moons" || len(r.Exchange) != 1 || r.Exchange[0].Member != "researcher" {
		t.Fatalf("TurnReview = %+v, %v", r, err)
	}
	r.State, r.Verdict, r.Objections = master.ReviewRevising, master.VerdictRevise, []string{"the results say 95"}
	if err := w.store.DecideReview(w.ctx, g, r); err != nil {
		t.Fatal(err)
	}
	if err := w.store.DecideReview(w.ctx, g, r); !errors.Is(err, master.ErrStale) {
		t.Errorf("a second verdict: %v, want ErrStale", err)
	}
	r, err = w.store.TurnReview(w.ctx, g.TurnID)
	if err != nil || r.State != master.ReviewRevising || r.Verdict != master.VerdictRevise || len(r.Objections) != 1 {
		t.Errorf("after the verdict: %+v, %v", r, err)
	}
	var kinds []string
	for _, s := range w.signals(sess) {
		kinds = append(kinds, string(s.Kind))
	}
	if len(kinds) != 1 || kinds[0] != "REVIEW_REVISED" {
		t.Errorf("signals = %v, want one REVIEW_REVISED", kinds)
	}
	if _, err := w.store.TurnReview(w.ctx, g.TurnID+1000); !errors.Is(err, master.ErrNotFound) {
		t.Errorf("a turn without a review: %v", err)
	}
}
