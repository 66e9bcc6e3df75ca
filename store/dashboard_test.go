package store_test

import (
	"slices"
	"testing"

	"github.com/callonbot/callon/dashboard"
)

// A signal whose transaction commits after a later signal was read is
// still read by the next Changes: ids are drawn at the write, not at the
// commit, so reading only after the cursor would skip it for good.
func TestChangesReadsASignalThatCommitsLate(t *testing.T) {
	t.Parallel()
	w := setup(t)
	early, late := w.session(), w.session()
	start, err := w.store.Changes(w.ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := w.pool.Begin(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback(w.ctx)
	if _, err := slow.Exec(w.ctx, `INSERT INTO signals (session_id, kind) VALUES ($1, 'PROGRESS')`, early); err != nil {
		t.Fatal(err)
	}
	if _, err := w.pool.Exec(w.ctx, `INSERT INTO signals (session_id, kind) VALUES ($1, 'PROGRESS')`, late); err != nil {
		t.Fatal(err)
	}
	first, err := w.store.Changes(w.ctx, start.Cursor)
	if err != nil {
		t.Fatal(err)
	}
	if got := sessionsOf(first.Signals); !slices.Equal(got, []int64{late}) {
		t.Fatalf("first read: sessions %v, want the committed signal's [%d]", got, late)
	}
	if err := slow.Commit(w.ctx); err != nil {
		t.Fatal(err)
	}
	second, err := w.store.Changes(w.ctx, first.Cursor)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(sessionsOf(second.Signals), early) {
		t.Errorf("after the slow transaction committed: signals %+v, want its signal (session %d) read although its id is below the cursor %d",
			second.Signals, early, first.Cursor)
	}
	if second.Cursor != first.Cursor {
		t.Errorf("cursor moved from %d to %d, want it to stay at the newest id", first.Cursor, second.Cursor)
	}
}

func sessionsOf(refs []dashboard.SignalRef) []int64 {
	var out []int64
	for _, r := range refs {
		out = append(out, r.SessionID)
	}
	return out
}

// The operator's signal search lists every guild that has or had teams,
// an old one with nothing today too, in order.
func TestGuildsListsEveryGuildWithTeams(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession() // guild g1
	w.exec(`UPDATE sessions SET guild_id = 'g0', created_at = now() - interval '40 days' WHERE id = $1`, s.ID)
	w.startSession()
	got, err := w.store.Guilds(w.ctx, 10)
	if err != nil || !slices.Equal(got, []string{"g0", "g1"}) {
		t.Errorf("Guilds = %v, %v; want [g0 g1]", got, err)
	}
}
