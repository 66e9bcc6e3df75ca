package store_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// guarded returns a guard on a fresh running turn of a session with
// memory, whose master lease owner holds.
func (w *world) guarded(owner string) (master.Guard, int64) {
	w.t.Helper()
	sess := w.session()
	if _, err := w.pool.Exec(w.ctx, `UPDATE sessions SET memory = true WHERE id = $1`, sess); err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.pool.Exec(w.ctx, `INSERT INTO session_roles (session_id, name, description, prompt, model, position)
		VALUES ($1, 'planner', 'plans', 'You plan.', '', 1)`, sess); err != nil {
		w.t.Fatal(err)
	}
	if ok, err := w.store.AcquireMaster(w.ctx, sess, owner, time.Minute); err != nil || !ok {
		w.t.Fatalf("AcquireMaster = %v, %v", ok, err)
	}
	turn := w.turn(sess)
	return master.Guard{SessionID: sess, TurnID: turn, Owner: owner}, sess
}

func TestRememberAndForgetNotes(t *testing.T) {
	t.Parallel()
	w := setup(t)
	g, sess := w.guarded("p1")
	note := func(text string) master.Note {
		return master.Note{GuildID: "g1", ChannelID: "c1", Text: text, AuthorID: "u1", SessionID: sess, TurnID: g.TurnID}
	}
	first, err := w.store.RememberNote(w.ctx, g, note("Launch on March 3"), 2)
	if err != nil || first.ID == 0 || first.Text != "Launch on March 3" {
		t.Fatalf("RememberNote = %+v, %v", first, err)
	}
	again, err := w.store.RememberNote(w.ctx, g, note("  Launch on   March 3 "), 2)
	if err != nil || again.ID != first.ID || !again.UpdatedAt.After(first.UpdatedAt) {
		t.Errorf("remembering the same text again = %+v, %v; want note %d refreshed", again, err, first.ID)
	}
	if _, err := w.store.RememberNote(w.ctx, g, note("Dana signs off"), 2); err != nil {
		t.Fatal(err)
	}
	if _, err := w.store.RememberNote(w.ctx, g, note("A third fact"), 2); !errors.Is(err, master.ErrMemoryFull) {
		t.Errorf("a note beyond the cap: %v, want ErrMemoryFull", err)
	}
	other := master.Note{GuildID: "g1", ChannelID: "c2", Text: "Another channel's", SessionID: sess, TurnID: g.TurnID}
	if _, err := w.store.RememberNote(w.ctx, g, other, 2); err != nil {
		t.Errorf("another channel's cap is its own: %v", err)
	}

	// The notes come with the session in the master's reads, its
	// channel's only.
	reads, err := w.store.TurnReads(w.ctx, sess, g.TurnID, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(reads.Notes) != 2 || reads.Notes[0].Text != "Launch on March 3" || reads.Notes[0].AuthorID != "u1" || reads.Notes[0].TurnID != g.TurnID {
		t.Errorf("TurnReads notes = %+v", reads.Notes)
	}

	// A task given a note reads it when it runs, unless it was forgotten
	// meanwhile.
	_, ids := w.enqueue(sess, master.NewTask{Role: "planner", Instruction: "plan", Notes: []int64{first.ID, reads.Notes[1].ID}})
	if n, err := w.store.ForgetNotes(w.ctx, g, "g1", "c1", []int64{first.ID}); err != nil || n != 1 {
		t.Fatalf("ForgetNotes = %d, %v", n, err)
	}
	in, err := w.store.TaskInput(w.ctx, w.task(ids[0]))
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Notes) != 1 || in.Notes[0].Text != "Dana signs off" {
		t.Errorf("TaskInput notes = %+v, want only the one not forgotten", in.Notes)
	}

	// A master that lost its turn writes nothing.
	stale := g
	stale.Owner = "p2"
	if _, err := w.store.RememberNote(w.ctx, stale, note("Stale"), 10); !errors.Is(err, master.ErrStale) {
		t.Errorf("RememberNote under a stale guard: %v, want ErrStale", err)
	}

	// Admins: show, forget, clear, each in the audit trail.
	notes, err := w.store.Notes(w.ctx, "g1", "c1")
	if err != nil || len(notes) != 1 {
		t.Fatalf("Notes = %+v, %v", notes, err)
	}
	if ok, err := w.store.ForgetNote(w.ctx, "g1", "c2", notes[0].ID, "admin"); err != nil || ok {
		t.Errorf("forgetting a note from the wrong channel = %v, %v; want false", ok, err)
	}
	if n, err := w.store.ClearNotes(w.ctx, "g1", "c1", "admin"); err != nil || n != 1 {
		t.Errorf("ClearNotes = %d, %v", n, err)
	}
	var trail string
	if err := w.pool.QueryRow(w.ctx, `SELECT string_agg(action || ':' || by_user, ',' ORDER BY id) FROM memory_changes
		WHERE channel_id = 'c1'`).Scan(&trail); err != nil {
		t.Fatal(err)
	}
	if trail != "remember:,remember:,remember:,forget:,clear:admin" {
		t.Errorf("audit trail = %s", trail)
	}
	var texts int
	if err := w.pool.QueryRow(w.ctx, `SELECT count(*) FROM memory_changes m, channel_notes n WHERE m.note_ids @> ARRAY[n.id]
		AND n.channel_id = 'c1'`).Scan(&texts); err != nil || texts != 0 {
		t.Errorf("cleared notes still in the channel: %d, %v", texts, err)
	}
}

// Notes not remembered again within the retention period are purged.
func TestNotesRetention(t *testing.T) {
	t.Parallel()
	w := setup(t)
	g, sess := w.guarded("p1")
	for _, text := range []string{"old fact", "fresh fact"} {
		if _, err := w.store.RememberNote(w.ctx, g, master.Note{GuildID: "g1", ChannelID: "c1", Text: text, SessionID: sess, TurnID: g.TurnID}, 10); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.pool.Exec(w.ctx, `UPDATE channel_notes SET updated_at = now() - interval '40 days' WHERE text = 'old fact'`); err != nil {
		t.Fatal(err)
	}
	p, ran, err := w.store.PurgeEnded(w.ctx, time.Now().Add(-30*24*time.Hour), 100)
	if err != nil || !ran || p.Notes != 1 {
		t.Fatalf("PurgeEnded = %+v, %v, %v; want one note purged", p, ran, err)
	}
	notes, _ := w.store.Notes(w.ctx, "g1", "c1")
	if len(notes) != 1 || !strings.Contains(notes[0].Text, "fresh") {
		t.Errorf("notes left = %+v", notes)
	}
}

// A first attempt that gets its input with its claim gets the notes it
// was given as TaskInput reads them: those its channel still keeps.
func TestClaimCarriesTheTasksNotes(t *testing.T) {
	t.Parallel()
	w := setup(t)
	g, sess := w.guarded("p1")
	var ids []int64
	for _, text := range []string{"Launch on March 3", "Dana signs off"} {
		n, err := w.store.RememberNote(w.ctx, g, master.Note{GuildID: "g1", ChannelID: "c1", Text: text, SessionID: sess, TurnID: g.TurnID}, 10)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, n.ID)
	}
	w.enqueue(sess, master.NewTask{Role: "planner", Instruction: "plan", Notes: ids})
	if n, err := w.store.ForgetNotes(w.ctx, g, "g1", "c1", ids[:1]); err != nil || n != 1 {
		t.Fatalf("ForgetNotes = %d, %v", n, err)
	}
	claimed := w.claim("w", 1)
	if len(claimed) != 1 || claimed[0].Input == nil {
		t.Fatalf("claimed %+v, want the task with its input", claimed)
	}
	got := *claimed[0].Input
	if len(got.Notes) != 1 || got.Notes[0].ID != ids[1] || got.Notes[0].Text != "Dana signs off" {
		t.Errorf("notes with the claim = %+v, want only the one not forgotten", got.Notes)
	}
	claimed[0].Input = nil
	want, err := w.store.TaskInput(w.ctx, claimed[0])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("input with the claim %+v\nwant TaskInput's %+v", got, want)
	}
}
