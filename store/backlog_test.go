package store_test

import (
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

func TestBacklogCountsOpenWork(t *testing.T) {
	t.Parallel()
	w := setup(t)
	b, err := w.store.Backlog(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b.Turns[master.TurnQueued] != 0 || b.Tasks[master.TaskRunning] != 0 || b.OutboxPending != 0 || b.OutboxOldest != 0 || b.ActiveSessions != 0 {
		t.Errorf("empty database: got %+v, want zeros", b)
	}
	if _, ok := b.Tasks[master.TaskQueued]; !ok {
		t.Error("a state with no row is missing; want it at 0")
	}

	s := w.session()
	w.turn(s) // running
	_, ids := w.enqueue(s, master.NewTask{Role: "a", Instruction: "x"}, master.NewTask{Role: "b", Instruction: "y", DependsOn: []int{0}}, master.NewTask{Role: "c", Instruction: "z"})
	w.claim("w1", 1) // the first: running; the second waits for it
	if _, err := w.pool.Exec(w.ctx, `
		INSERT INTO outbox (session_id, kind, channel_id, content, nonce, created_at)
		VALUES ($1, 'notice', 'c1', 'one', 'n1', now() - interval '90 seconds'), ($1, 'notice', 'c1', 'two', 'n2', now())`, s); err != nil {
		t.Fatal(err)
	}
	b, err = w.store.Backlog(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 3 || b.Turns[master.TurnRunning] != 2 || b.Tasks[master.TaskRunning] != 1 || b.Tasks[master.TaskQueued] != 2 {
		t.Errorf("got turns %v, tasks %v; want 2 running turns (enqueue adds one), 1 running and 2 queued tasks", b.Turns, b.Tasks)
	}
	if b.ClaimableTasks != 1 {
		t.Errorf("claimable = %d, want 1 (the other waits for its dependency)", b.ClaimableTasks)
	}
	if b.OutboxPending != 2 || b.OutboxOldest < 89*time.Second || b.OutboxOldest > 5*time.Minute {
		t.Errorf("outbox = %d, oldest %s; want 2, about 90 s", b.OutboxPending, b.OutboxOldest)
	}
	if b.ActiveSessions != 1 {
		t.Errorf("active sessions = %d, want 1", b.ActiveSessions)
	}
}
