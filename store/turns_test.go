package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// startSession starts a session with the default roster in a new thread.
func (w *world) startSession() master.Session {
	w.t.Helper()
	n := fixtureSeq.Add(1)
	s, err := w.store.StartSession(w.ctx, master.Session{GuildID: "g1", ChannelID: "c1",
		ThreadID: fmt.Sprint("th-", n), OwnerID: "u1", Goal: "ship it"}, master.DefaultRoles(), "kickoff!", "", master.SessionCaps{})
	if err != nil {
		w.t.Fatalf("StartSession: %v", err)
	}
	return s
}

func (w *world) record(s master.Session, msgID string) (master.Turn, bool) {
	w.t.Helper()
	turn, created, err := w.store.RecordTurn(w.ctx, master.Turn{SessionID: s.ID, MessageID: msgID,
		GuildID: s.GuildID, ChannelID: s.ThreadID, AuthorID: "u1", Content: "hi " + msgID}, master.Admission{})
	if err != nil {
		w.t.Fatalf("RecordTurn: %v", err)
	}
	return turn, created
}

func (w *world) lease(s master.Session, owner string) {
	w.t.Helper()
	ok, err := w.store.AcquireMaster(w.ctx, s.ID, owner, time.Minute)
	if err != nil || !ok {
		w.t.Fatalf("AcquireMaster(%s) = %v, %v; want true", owner, ok, err)
	}
}

func TestStartSessionRosterKickoffAndOneActivePerThread(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	roster, err := w.store.Roster(w.ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := master.RoleNames(roster), master.RoleNames(master.DefaultRoles()); !slices.Equal(got, want) {
		t.Errorf("roster = %v, want %v in order", got, want)
	}
	got, err := w.store.ActiveSession(w.ctx, s.ThreadID)
	if err != nil || got.ID != s.ID || got.Goal != "ship it" {
		t.Errorf("ActiveSession = %+v, %v; want session %d", got, err, s.ID)
	}
	_, err = w.store.StartSession(w.ctx, master.Session{GuildID: "g1", ChannelID: "c1", ThreadID: s.ThreadID,
		OwnerID: "u2", Goal: "again"}, master.DefaultRoles(), "", "", master.SessionCaps{})
	if !errors.Is(err, master.ErrSessionActive) {
		t.Errorf("second StartSession in the thread: got %v, want ErrSessionActive", err)
	}
	msgs, err := w.store.ClaimOutbox(w.ctx, master.Scope{}, "p1", 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || msgs[0].Kind != master.OutKickoff || msgs[0].ChannelID != s.ThreadID || msgs[0].Content != "kickoff!" {
		t.Errorf("outbox = %+v, want the kickoff for the thread", msgs)
	}
	if _, err := w.store.ActiveSession(w.ctx, "nope"); !errors.Is(err, master.ErrNotFound) {
		t.Errorf("ActiveSession(unknown) = %v, want ErrNotFound", err)
	}
}

func TestRecordTurnIsIdempotentAndAnswersAWaitingTurn(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	first, created := w.record(s, "m1")
	if !created || first.State != master.TurnQueued {
		t.Fatalf("first record: created %v state %s, want true queued", created, first.State)
	}
	again, created := w.record(s, "m1")
	if created || again.ID != first.ID {
		t.Errorf("redelivery: created %v id %d, want false and the same turn %d", created, again.ID, first.ID)
	}
	// The master asks a question; the next message answers it.
	w.lease(s, "p1")
	open, err := w.store.OpenTurn(w.ctx, s.ID)
	if err != nil || open.ID != first.ID || open.State != master.TurnRunning {
		t.Fatalf("OpenTurn = %+v, %v; want turn %d running", open, err, first.ID)
	}
	g := master.Guard{SessionID: s.ID, TurnID: first.ID, Round: 0, Owner: "p1"}
	if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutQuestion, State: master.TurnWaiting, Parts: []string{"Which one?"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.store.OpenTurn(w.ctx, s.ID); !errors.Is(err, master.ErrNotFound) {
		t.Errorf("OpenTurn while waiting = %v, want ErrNotFound", err)
	}
	second, _ := w.record(s, "m2")
	hist, err := w.store.History(w.ctx, s.ID, second.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 1 || !hist[0].Asked || hist[0].Answer != "Which one?" || hist[0].Message != "hi m1" {
		t.Errorf("history = %+v, want the answered question", hist)
	}
}

func TestFanInPendingAndGuards(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	turn, _ := w.record(s, "m1")
	pending := func() bool {
		ids, err := w.store.PendingSessions(w.ctx, master.Scope{}, "p1")
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(ids, s.ID)
	}
	if !pending() {
		t.Fatal("a queued turn's session is not pending")
	}
	w.lease(s, "p1")
	if ok, _ := w.store.AcquireMaster(w.ctx, s.ID, "p2", time.Minute); ok {
		t.Error("a second owner acquired a live master lease")
	}
	if _, err := w.store.OpenTurn(w.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	g := master.Guard{SessionID: s.ID, TurnID: turn.ID, Round: 0, Owner: "p1"}
	ids, err := w.store.Delegate(w.ctx, g, []master.NewTask{{Role: "researcher", Instruction: "a"}, {Role: "writer", Instruction: "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if pending() {
		t.Error("session pending while its round has open tasks")
	}
	// A decision made for round 0 is stale now.
	if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutReply, State: master.TurnDone, Parts: []string{"x"}}); !errors.Is(err, master.ErrStale) {
		t.Errorf("Finish with an old round: %v, want ErrStale", err)
	}
	for _, tk := range w.claim("w1", 2) {
		if _, err := w.store.CompleteTask(w.ctx, tk.ID, tk.Attempt, master.Outcome{State: master.TaskDone, Result: "ok"}); err != nil {
			t.Fatal(err)
		}
		if tk.ID == ids[0] && pending() {
			t.Error("session pending with one task of the round still open")
		}
	}
	if !pending() {
		t.Error("session not pending after every task of the round ended")
	}
	g.Round = 1
	if err := w.store.ReleaseMaster(w.ctx, s.ID, "p1"); err != nil {
		t.Fatal(err)
	}
	if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutReply, State: master.TurnDone, Parts: []string{"x"}}); !errors.Is(err, master.ErrStale) {
		t.Errorf("Finish without the lease: %v, want ErrStale", err)
	}
	w.lease(s, "p1")
	fin := master.Finish{Kind: master.OutReply, State: master.TurnDone, Parts: []string{"part one", "part two"}}
	if err := w.store.Finish(w.ctx, g, fin); err != nil {
		t.Fatal(err)
	}
	if err := w.store.Finish(w.ctx, g, fin); !errors.Is(err, master.ErrStale) {
		t.Errorf("second Finish: %v, want ErrStale (one reply per turn)", err)
	}
	if pending() {
		t.Error("session still pending after its only turn finished")
	}
}

func TestOutboxOrderRetryAndSent(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	turn, _ := w.record(s, "m1")
	w.lease(s, "p1")
	w.store.OpenTurn(w.ctx, s.ID)
	g := master.Guard{SessionID: s.ID, TurnID: turn.ID, Owner: "p1"}
	if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutReply, State: master.TurnDone, Parts: []string{"one", "two"}}); err != nil {
		t.Fatal(err)
	}
	msgs, err := w.store.ClaimOutbox(w.ctx, master.Scope{}, "p1", 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 || msgs[0].Kind != master.OutKickoff || msgs[1].Content != "one" || msgs[2].Content != "two" {
		t.Fatalf("claimed %+v, want kickoff, one, two", msgs)
	}
	if msgs[1].ReplyTo != "m1" || msgs[2].ReplyTo != "" {
		t.Errorf("reply_to = %q, %q; want only the first part to reference m1", msgs[1].ReplyTo, msgs[2].ReplyTo)
	}
	if msgs[1].Nonce == msgs[2].Nonce || len(msgs[1].Nonce) > 25 {
		t.Errorf("nonces %q %q: want distinct, at most 25 characters", msgs[1].Nonce, msgs[2].Nonce)
	}
	if again, _ := w.store.ClaimOutbox(w.ctx, master.Scope{}, "p2", 10, time.Minute); len(again) != 0 {
		t.Errorf("claimed leased messages again: %+v", again)
	}
	w.store.MarkSent(w.ctx, msgs[0].ID, "d0")
	// Part one fails for now: part two must not overtake it.
	w.store.MarkUnsent(w.ctx, msgs[1].ID, "503", time.Hour, false)
	w.pool.Exec(w.ctx, `UPDATE outbox SET lease_until = NULL WHERE id = $1`, msgs[2].ID)
	if again, _ := w.store.ClaimOutbox(w.ctx, master.Scope{}, "p2", 10, time.Minute); len(again) != 0 {
		t.Errorf("claimed %+v while an earlier part waits for its retry", again)
	}
	w.pool.Exec(w.ctx, `UPDATE outbox SET lease_until = NULL WHERE id = $1`, msgs[1].ID)
	retry, _ := w.store.ClaimOutbox(w.ctx, master.Scope{}, "p2", 10, time.Minute)
	if len(retry) != 2 || retry[0].ID != msgs[1].ID || retry[0].Attempts != 1 {
		t.Fatalf("retry claim = %+v, want parts one (attempt 1) and two", retry)
	}
	w.store.MarkSent(w.ctx, retry[0].ID, "d1")
	w.store.MarkSent(w.ctx, retry[0].ID, "d1-again")
	w.store.MarkSent(w.ctx, retry[1].ID, "d2")
	var replyID string
	w.pool.QueryRow(w.ctx, `SELECT reply_message_id FROM turns WHERE id = $1`, turn.ID).Scan(&replyID)
	if replyID != "d1" {
		t.Errorf("turn reply_message_id = %q, want d1 (the first part, recorded once)", replyID)
	}
}
