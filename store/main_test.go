package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// world is one test's store on its own database.
type world struct {
	t     testing.TB
	ctx   context.Context
	store *store.Store
	pool  *pgxpool.Pool // the store's pool, for fixtures and assertions
}

func setup(t testing.TB) *world {
	t.Helper()
	s := storetest.New(t)
	return &world{t: t, ctx: t.Context(), store: s, pool: store.Pool(s)}
}

var fixtureSeq atomic.Int64

// session inserts an active session and returns its id.
func (w *world) session() int64 {
	w.t.Helper()
	n := fixtureSeq.Add(1)
	var id int64
	err := w.pool.QueryRow(w.ctx, `
		INSERT INTO sessions (guild_id, channel_id, thread_id, owner_id, goal)
		VALUES ('g1', 'c1', $1, 'u1', 'ship it') RETURNING id`, fmt.Sprint("thread-", n)).Scan(&id)
	if err != nil {
		w.t.Fatalf("insert session: %v", err)
	}
	return id
}

// turn inserts a running turn of session and returns its id.
func (w *world) turn(session int64) int64 {
	w.t.Helper()
	n := fixtureSeq.Add(1)
	var id int64
	err := w.pool.QueryRow(w.ctx, `
		INSERT INTO turns (session_id, message_id, guild_id, channel_id, author_id, content, state)
		VALUES ($1, $2, 'g1', 't1', 'u1', 'hello', 'running') RETURNING id`, session, fmt.Sprint("msg-", n)).Scan(&id)
	if err != nil {
		w.t.Fatalf("insert turn: %v", err)
	}
	return id
}

// enqueue queues tasks for a fresh turn of session and returns the turn
// and the task ids.
func (w *world) enqueue(session int64, tasks ...master.NewTask) (int64, []int64) {
	w.t.Helper()
	turn := w.turn(session)
	ids, err := w.store.EnqueueTasks(w.ctx, session, turn, 1, tasks)
	if err != nil {
		w.t.Fatalf("EnqueueTasks: %v", err)
	}
	return turn, ids
}

// claim claims up to n tasks for worker with a 30 s lease.
func (w *world) claim(worker string, n int) []master.Task {
	w.t.Helper()
	tasks, err := w.store.ClaimTasks(w.ctx, master.Scope{}, worker, n, leaseTime)
	if err != nil {
		w.t.Fatalf("ClaimTasks: %v", err)
	}
	return tasks
}

// task reads a task.
func (w *world) task(id int64) master.Task {
	w.t.Helper()
	t, err := w.store.Task(w.ctx, id)
	if err != nil {
		w.t.Fatalf("Task(%d): %v", id, err)
	}
	return t
}

// expire moves a task's lease into the past, as if its worker died.
func (w *world) expire(id int64) {
	w.t.Helper()
	if _, err := w.pool.Exec(w.ctx, `UPDATE tasks SET lease_until = now() - interval '1 second' WHERE id = $1`, id); err != nil {
		w.t.Fatalf("expire lease: %v", err)
	}
}

// signals returns every signal of session.
func (w *world) signals(session int64) []master.Signal {
	w.t.Helper()
	sigs, err := w.store.Signals(w.ctx, session, 0, 1000)
	if err != nil {
		w.t.Fatalf("Signals: %v", err)
	}
	return sigs
}

func task(role, instruction string, deps ...int) master.NewTask {
	return master.NewTask{Role: role, Instruction: instruction, DependsOn: deps}
}
