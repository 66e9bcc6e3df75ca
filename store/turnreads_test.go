package store_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/callonbot/callon/master"
)

// TurnReads's one round trip reads what the five reads it replaces read,
// files with their bytes included.
func TestTurnReadsMatchesTheSeparateReads(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	// A first turn delegates, then asks: the history carries its results.
	g, _ := w.delegateRound(s, task("researcher", "a"))
	tk := w.claim("w1", 5)[0]
	if _, err := w.store.CompleteTask(w.ctx, tk.ID, tk.Attempt, master.Outcome{State: master.TaskDone, Result: "found it"}); err != nil {
		t.Fatal(err)
	}
	if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutQuestion, State: master.TurnWaiting, Parts: []string{"Which one?"}}); err != nil {
		t.Fatal(err)
	}
	second := w.recordWith(s, "m2", "", master.IncomingAttachment{ID: "a1", Filename: "notes.md", ContentType: "text/markdown", Size: 7},
		master.IncomingAttachment{ID: "a2", Filename: "blob.png", ContentType: "image/png", Size: 256})
	// One file stored, with every byte value (newlines, bytes that are
	// not UTF-8), the other still pending (no data).
	blob := make([]byte, 256)
	for i := range blob {
		blob[i] = byte(i)
	}
	w.exec(`UPDATE attachments SET state = 'stored', data = $2, size = 256 WHERE turn_id = $1 AND discord_id = 'a2'`, second.ID, blob)

	got, err := w.store.TurnReads(w.ctx, s.ID, second.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	var want master.TurnReads
	if want.Tasks, err = w.store.TurnTasks(w.ctx, second.ID); err != nil {
		t.Fatal(err)
	}
	want.Attachments = w.attachments(second.ID)
	if want.Session, err = w.store.Session(w.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if want.Roster, err = w.store.Roster(w.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if want.History, err = w.store.History(w.ctx, s.ID, second.ID, 10); err != nil {
		t.Fatal(err)
	}
	if len(want.Attachments) != 2 || !bytes.Equal(want.Attachments[1].Data, blob) || len(want.Roster) == 0 || len(want.History) != 1 || len(want.History[0].Results) != 1 {
		t.Fatalf("separate reads = %+v, want a file, a roster and an asked exchange with its result", want)
	}
	// The roster's statement also reads the roles' records: the first
	// turn's researcher task ended done.
	want.Tracks = map[string]master.RoleTrack{"researcher": {Last: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("TurnReads = %+v\nwant %+v", got, want)
	}

	// The first turn's own reads: its round's task.
	got, err = w.store.TurnReads(w.ctx, s.ID, g.TurnID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tasks) != 1 || got.Tasks[0].Result != "found it" || len(got.History) != 0 {
		t.Errorf("first turn's reads = %+v, want its task and no history", got)
	}

	if _, err := w.store.TurnReads(w.ctx, s.ID+1000, second.ID, 10); !errors.Is(err, master.ErrNotFound) {
		t.Errorf("TurnReads(unknown session) = %v, want ErrNotFound", err)
	}
}
