package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
)

// A turn resumed by the user's answer may ask again: each question is
// posted once, under its own key, and the turn can still reply.
func TestTurnAsksSeveralQuestions(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	turn, _ := w.record(s, "m1")
	w.lease(s, "p1")
	w.store.OpenTurn(w.ctx, s.ID)
	g := master.Guard{SessionID: s.ID, TurnID: turn.ID, Owner: "p1"}
	for i, q := range []string{"how many?", "which city?"} {
		if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutQuestion, State: master.TurnWaiting, Parts: []string{q}}); err != nil {
			t.Fatalf("question %d: %v", i, err)
		}
		// The user's answer sends the turn back to work (as answerWaitingTurn does).
		w.pool.Exec(w.ctx, `UPDATE turns SET state = 'running' WHERE id = $1`, turn.ID)
	}
	if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutReply, State: master.TurnDone, Parts: []string{"done"}}); err != nil {
		t.Fatal(err)
	}
	rows, _ := w.pool.Query(w.ctx, `SELECT kind || seq || ':' || content || ':' || nonce FROM outbox WHERE turn_id = $1 ORDER BY id`, turn.ID)
	var got []string
	for rows.Next() {
		var s string
		rows.Scan(&s)
		got = append(got, s)
	}
	want := []string{
		"question0:how many?:t" + itoa(turn.ID) + "q0.0",
		"question1:which city?:t" + itoa(turn.ID) + "q1.0",
		"reply0:done:t" + itoa(turn.ID) + "r0",
	}
	if len(got) != len(want) {
		t.Fatalf("outbox = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("outbox[%d] = %q, want %q", i, got[i], want[i])
		}
	}
	// A second reply is still impossible.
	w.pool.Exec(w.ctx, `UPDATE turns SET state = 'running' WHERE id = $1`, turn.ID)
	if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutReply, State: master.TurnDone, Parts: []string{"again"}}); err == nil {
		t.Error("a second reply was queued")
	}
}

// A claim never takes a channel's message while an earlier one is being
// claimed by someone else right now: parts stay in order across processes.
func TestClaimOutboxNeverOvertakesAClaimInProgress(t *testing.T) {
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
	var one int64
	w.pool.QueryRow(w.ctx, `SELECT id FROM outbox WHERE turn_id = $1 AND part = 0`, turn.ID).Scan(&one)
	// Another process is in the middle of claiming part one.
	tx, err := w.pool.Begin(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(w.ctx, `SELECT id FROM outbox WHERE id = $1 FOR UPDATE`, one); err != nil {
		t.Fatal(err)
	}
	msgs, err := w.store.ClaimOutbox(w.ctx, master.Scope{}, "p2", 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.TurnID == turn.ID {
			t.Errorf("claimed %q while part one was being claimed elsewhere", m.Content)
		}
	}
}

// A message given back untried counts no attempt, and does not look as if
// it may have been sent; a claim that lapsed does.
func TestReleaseOutboxCountsNoAttempt(t *testing.T) {
	t.Parallel()
	w := setup(t)
	w.startSession()
	msgs, _ := w.store.ClaimOutbox(w.ctx, master.Scope{}, "p1", 10, time.Minute)
	if len(msgs) != 1 || !msgs[0].MaybeSentAt.IsZero() {
		t.Fatalf("claimed %+v, want the kickoff, never tried", msgs)
	}
	if err := w.store.ReleaseOutbox(w.ctx, msgs[0]); err != nil {
		t.Fatal(err)
	}
	again, _ := w.store.ClaimOutbox(w.ctx, master.Scope{}, "p1", 10, time.Minute)
	if len(again) != 1 || again[0].Attempts != 0 || !again[0].MaybeSentAt.IsZero() {
		t.Fatalf("after a release: %+v, want attempts 0 and not maybe sent", again)
	}
	// This claim lapses without a word (the process died mid-send).
	w.pool.Exec(w.ctx, `UPDATE outbox SET lease_until = now() - interval '1 second' WHERE id = $1`, again[0].ID)
	third, _ := w.store.ClaimOutbox(w.ctx, master.Scope{}, "p2", 10, time.Minute)
	if len(third) != 1 || third[0].MaybeSentAt.IsZero() {
		t.Fatalf("after a lapsed claim: %+v, want maybe sent", third)
	}
}

// A turn that reports twice (run again after a crash) is told it reported
// already, not an internal error.
func TestSecondReportOfATurn(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s, err := w.store.StartSession(w.ctx, master.Session{GuildID: "g1", ChannelID: "c1", ThreadID: "th-report",
		OwnerID: "u1", Goal: "ship it", ReportTo: "c-report"}, master.DefaultRoles(), "kickoff!", "", master.SessionCaps{})
	if err != nil {
		t.Fatal(err)
	}
	turn, _ := w.record(s, "m1")
	w.lease(s, "p1")
	w.store.OpenTurn(w.ctx, s.ID)
	g := master.Guard{SessionID: s.ID, TurnID: turn.ID, Owner: "p1"}
	r := master.NewReport{Summary: "done", Posted: []string{"done"}, Turn: "done"}
	if _, err := w.store.ReportBack(w.ctx, g, r); err != nil {
		t.Fatal(err)
	}
	if _, err := w.store.ReportBack(w.ctx, g, r); !errors.Is(err, master.ErrAlreadyReported) {
		t.Errorf("second report: got %v, want ErrAlreadyReported", err)
	}
}

// A reply decided just before /dissolve is not posted.
func TestDissolveCancelsAPendingReply(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	turn, _ := w.record(s, "m1")
	w.lease(s, "p1")
	w.store.OpenTurn(w.ctx, s.ID)
	g := master.Guard{SessionID: s.ID, TurnID: turn.ID, Owner: "p1"}
	if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutReply, State: master.TurnDone, Parts: []string{"late"}}); err != nil {
		t.Fatal(err)
	}
	if err := w.store.Dissolve(w.ctx, s.ID, "bye", nil, nil); err != nil {
		t.Fatal(err)
	}
	msgs, _ := w.store.ClaimOutbox(w.ctx, master.Scope{}, "p1", 10, time.Minute)
	for _, m := range msgs {
		if m.Kind == master.OutReply {
			t.Errorf("claimed the reply %q of a dissolved team", m.Content)
		}
	}
	if len(msgs) != 2 {
		t.Errorf("claimed %d messages, want the kickoff and the summary", len(msgs))
	}
}

// Text Postgres cannot store as it is (NUL, invalid UTF-8) is cleaned on
// its way in, never refused.
func TestTextIsCleanedBeforeItIsStored(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	turn, created, err := w.store.RecordTurn(w.ctx, master.Turn{SessionID: s.ID, MessageID: "m1", GuildID: "g1",
		ChannelID: s.ThreadID, AuthorID: "u1", Content: "a\x00b\xffc"}, master.Admission{})
	if err != nil || !created {
		t.Fatalf("RecordTurn: %v, %v", created, err)
	}
	if turn.Content != "a\uFFFDb\uFFFDc" {
		t.Errorf("content = %q", turn.Content)
	}
	_, ids := w.delegateRound(w.startSession(), task("researcher", "look"))
	tasks := w.claim("w1", 1)
	if _, err := w.store.CompleteTask(w.ctx, ids[0], tasks[0].Attempt, master.Outcome{State: master.TaskNeedInfo,
		Result: "r\x00", Question: "q\x00?"}); err != nil {
		t.Fatalf("CompleteTask with NUL: %v", err)
	}
	if _, err := w.store.AddSignal(w.ctx, master.Signal{SessionID: s.ID, Kind: master.SignalProgress,
		Payload: []byte(`{"note":"x\u0000y","raw":"\\u0000"}`)}); err != nil {
		t.Fatalf("AddSignal with \\u0000: %v", err)
	}
}

// A process whose liveness lock is free has its work taken back by the
// next sweeps, at once; a live one keeps its work.
func TestDeadProcessWorkIsTakenOver(t *testing.T) {
	t.Parallel()
	w := setup(t)
	live := w.store.NewLiveness("p-live")
	ctx, stop := context.WithCancel(w.ctx)
	done := make(chan error, 1)
	go func() { done <- live.Run(ctx) }()
	<-live.Ready()

	sDead, sLive := w.startSession(), w.startSession()
	for _, c := range []struct {
		s     master.Session
		owner string
	}{{sDead, "p-dead"}, {sLive, "p-live"}} {
		w.lease(c.s, c.owner)
		_, ids := w.enqueue(c.s.ID, task("researcher", "look"))
		if got := w.claim(c.owner, 1); len(got) != 1 || got[0].ID != ids[0] {
			t.Fatalf("claim for %s: %+v", c.owner, got)
		}
	}
	// p-dead registered once, and its lock has been free for a while.
	if _, err := w.pool.Exec(w.ctx, `INSERT INTO processes (owner, lost_at) VALUES ('p-dead', now() - interval '1 minute')`); err != nil {
		t.Fatal(err)
	}
	requeued, failed, err := w.store.SweepExpired(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if requeued != 1 || failed != 0 {
		t.Errorf("swept %d requeued, %d failed; want p-dead's one task requeued", requeued, failed)
	}
	var owners []string
	rows, _ := w.pool.Query(w.ctx, `SELECT coalesce(master_owner, '-') FROM sessions WHERE id IN ($1, $2) ORDER BY id`, sDead.ID, sLive.ID)
	for rows.Next() {
		var o string
		rows.Scan(&o)
		owners = append(owners, o)
	}
	if len(owners) != 2 || owners[0] != "-" || owners[1] != "p-live" {
		t.Errorf("master owners = %v, want p-dead's freed and p-live's kept", owners)
	}
	var registered int
	w.pool.QueryRow(w.ctx, `SELECT count(*) FROM processes WHERE owner = 'p-dead'`).Scan(&registered)
	if registered != 0 {
		t.Error("the dead process is still registered")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A graceful stop unregisters: nobody takes p-live for dead.
	w.pool.QueryRow(w.ctx, `SELECT count(*) FROM processes WHERE owner = 'p-live'`).Scan(&registered)
	if registered != 0 {
		t.Error("a process that stopped gracefully is still registered")
	}
}

// A process that loses its liveness connection locks again and is not
// taken for dead.
func TestLivenessLocksAgainAfterALostConnection(t *testing.T) {
	t.Parallel()
	w := setup(t)
	live := w.store.NewLiveness("p1")
	store.SetLivenessTimings(live, 10*time.Millisecond)
	ctx, stop := context.WithCancel(w.ctx)
	defer stop()
	go live.Run(ctx)
	<-live.Ready()
	var pid int
	if err := w.pool.QueryRow(w.ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = 'callon-liveness' AND datname = current_database()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := w.pool.Exec(w.ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var newPid int
		err := w.pool.QueryRow(w.ctx, `SELECT l.pid FROM pg_locks l JOIN processes p ON l.objid = p.lock_key
			WHERE l.locktype = 'advisory' AND l.granted AND p.owner = 'p1' AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&newPid)
		if err == nil && newPid != pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the liveness lock was not taken again (last: %v)", err)
		}
		time.Sleep(20 * time.Millisecond) // polling an outside effect: no event to wait on
	}
	if _, _, err := w.store.SweepExpired(w.ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	w.pool.QueryRow(w.ctx, `SELECT count(*) FROM processes WHERE owner = 'p1' AND lost_at IS NULL`).Scan(&n)
	if n != 1 {
		t.Error("a process that locked again was taken for dead")
	}
}

// CALLON_MAX_ATTEMPTS is honoured: a task claimed that many times fails
// when its lease lapses again.
func TestMaxAttemptsIsHonoured(t *testing.T) {
	t.Parallel()
	w := setup(t)
	w.store.SetMaxAttempts(1)
	s := w.session()
	_, ids := w.enqueue(s, task("researcher", "look"))
	w.claim("w1", 1)
	w.expire(ids[0])
	requeued, failed, err := w.store.SweepExpired(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if requeued != 0 || failed != 1 || w.task(ids[0]).State != master.TaskFailed {
		t.Errorf("swept %d requeued, %d failed, state %s; want the task failed after its one attempt", requeued, failed, w.task(ids[0]).State)
	}
}

// A turn that asks the user closes any other turn still waiting for an
// answer: at most one turn waits, the one that asked last (a message
// queued before the first question was asked ran and asked in its turn).
func TestAQuestionClosesTheOtherWaitingTurn(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	first, _ := w.record(s, "m1")
	second, _ := w.record(s, "m2") // queued while the first runs
	w.lease(s, "p1")
	for _, turn := range []master.Turn{first, second} {
		if got, err := w.store.OpenTurn(w.ctx, s.ID); err != nil || got.ID != turn.ID {
			t.Fatalf("OpenTurn = %v, %v; want turn %d", got.ID, err, turn.ID)
		}
		g := master.Guard{SessionID: s.ID, TurnID: turn.ID, Owner: "p1"}
		if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutQuestion, State: master.TurnWaiting, Parts: []string{"which one?"}}); err != nil {
			t.Fatal(err)
		}
	}
	var states []string
	rows, _ := w.pool.Query(w.ctx, `SELECT state FROM turns WHERE session_id = $1 ORDER BY id`, s.ID)
	for rows.Next() {
		var st string
		rows.Scan(&st)
		states = append(states, st)
	}
	if len(states) != 2 || states[0] != "done" || states[1] != "waiting" {
		t.Errorf("turn states %v, want [done waiting]: only the latest question waits", states)
	}
}
