package store_test

import (
	"strings"
	"testing"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/store/storetest"
)

// Transcript lists a session's turns in message order with the answer
// each got: a reply, a question, or nothing yet.
func TestTranscript(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	g, _ := w.delegateRound(s, task("researcher", "a"))
	if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutQuestion, State: master.TurnWaiting, Parts: []string{"Which one?"}}); err != nil {
		t.Fatal(err)
	}
	w.record(s, "m-later")
	turns, answers, err := w.store.Transcript(w.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 || len(answers) != 2 {
		t.Fatalf("Transcript = %d turns, %d answers, want 2 and 2", len(turns), len(answers))
	}
	if turns[0].ID != g.TurnID || turns[0].Round != 1 || answers[0].Answer != "Which one?" || !answers[0].Asked || answers[0].TurnID != g.TurnID {
		t.Errorf("first = %+v / %+v, want the delegating turn that asked", turns[0], answers[0])
	}
	if turns[1].Content != "hi m-later" || answers[1].Answer != "" || answers[1].Asked {
		t.Errorf("second = %+v / %+v, want the later turn with no answer", turns[1], answers[1])
	}
}

// A store opened ReadOnly reads, and Postgres refuses its every write.
func TestReadOnlyStoreRefusesWrites(t *testing.T) {
	t.Parallel()
	url := storetest.URL(t)
	rw, err := store.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := rw.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	s, err := rw.StartSession(t.Context(), master.Session{GuildID: "g", ChannelID: "c", ThreadID: "th", OwnerID: "u", Goal: "g"},
		master.DefaultRoles(), "kickoff", "", master.SessionCaps{})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := store.Open(t.Context(), url, nil, store.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, _, err := ro.Transcript(t.Context(), s.ID); err != nil {
		t.Errorf("a read: %v", err)
	}
	if _, err := ro.TurnReads(t.Context(), s.ID, 0, 10); err != nil {
		t.Errorf("TurnReads: %v", err)
	}
	_, _, err = ro.RecordTurn(t.Context(), master.Turn{SessionID: s.ID, MessageID: "m1", GuildID: "g", ChannelID: "th", AuthorID: "u", Content: "hi"}, master.Admission{})
	if err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Errorf("RecordTurn on a read-only store = %v, want refused by Postgres", err)
	}
	if _, err := ro.AcquireMaster(t.Context(), s.ID, "p", 0); err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Errorf("AcquireMaster on a read-only store = %v, want refused by Postgres", err)
	}
}
