package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/callonbot/callon/internal/proc"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/store/storetest"
	"github.com/callonbot/callon/workers"
)

// The task layer's benchmarks drive the real workers.Pool against the
// real store, wired as `callon` wires them (a listener for wakes, a
// liveness lock), with a model that answers at once: what they measure
// is callon's own cost per task. Run them with a fixed count, e.g.
//
//	go test ./store -run '^$' -bench 'BurnDown|Pickup' -benchtime 20000x
//
// They report, besides time: tasks/s, pickup percentiles (enqueue commit
// → claim returned), Postgres round trips and statements per task, and
// the connections the pool had to open while running.

// instantModel reports done at once.
type instantModel struct{}

func (instantModel) Chat(context.Context, master.ChatRequest) (master.ChatResponse, error) {
	return master.ChatResponse{ToolCalls: []master.ToolCall{
		{ID: "r", Name: workers.ToolReport, Arguments: `{"status":"done","result":"ok"}`},
	}}, nil
}

// endCounter counts written outcomes and closes done at want.
type endCounter struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

func (*endCounter) ToolCalled(string, string, string) {}
func (e *endCounter) TaskEnded(string, master.TaskState, time.Duration) {
	if e.n.Add(1) == e.want {
		close(e.done)
	}
}

// claimClock is the store as the pool sees it, noting when each task's
// claim returned.
type claimClock struct {
	*store.Store
	mu      sync.Mutex
	claimed map[int64]time.Time
}

func (c *claimClock) ClaimTasks(ctx context.Context, scope master.Scope, workerID string, n int, lease time.Duration) ([]master.Task, error) {
	tasks, err := c.Store.ClaimTasks(ctx, scope, workerID, n, lease)
	now := time.Now()
	c.mu.Lock()
	for _, t := range tasks {
		c.claimed[t.ID] = now
	}
	c.mu.Unlock()
	return tasks, err
}

// benchWorld is a counting store on its own database, with a listener and
// this process's liveness running.
type benchWorld struct {
	ctx    context.Context
	store  *store.Store
	counts *store.Counts
	pool   *pgxpool.Pool
	wake   <-chan string
	owner  string
}

func benchSetup(b testing.TB) *benchWorld {
	b.Helper()
	s, counts := store.OpenCounting(b, storetest.URL(b))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	b.Cleanup(func() { cancel(); wg.Wait() })
	l := s.NewListener()
	wake, _ := l.Subscribe()
	owner := proc.NewOwner()
	live := s.NewLiveness(owner)
	wg.Go(func() { l.Run(ctx) })
	wg.Go(func() { live.Run(ctx) })
	<-live.Ready()
	return &benchWorld{ctx: ctx, store: s, counts: counts, pool: store.Pool(s), wake: wake, owner: owner}
}

// sessions inserts n active sessions with the role "worker" and one running
// turn each, and returns their ids and their turns'.
func (w *benchWorld) sessions(b testing.TB, n int) (sessions, turns []int64) {
	b.Helper()
	rows, err := w.pool.Query(w.ctx, `
		WITH s AS (
			INSERT INTO sessions (guild_id, channel_id, thread_id, owner_id, goal)
			SELECT 'g1', 'c1', 'bench-' || g, 'u1', 'benchmark' FROM generate_series(1, $1) g
			RETURNING id
		), r AS (
			INSERT INTO session_roles (session_id, name, description) SELECT id, 'worker', 'does it' FROM s
		)
		INSERT INTO turns (session_id, message_id, guild_id, channel_id, author_id, content, state)
		SELECT id, 'm-' || id, 'g1', 't1', 'u1', 'go', 'running' FROM s
		RETURNING session_id, id`, n)
	if err != nil {
		b.Fatalf("sessions: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s, t int64
		if err := rows.Scan(&s, &t); err != nil {
			b.Fatalf("sessions: %v", err)
		}
		sessions, turns = append(sessions, s), append(turns, t)
	}
	if err := rows.Err(); err != nil {
		b.Fatalf("sessions: %v", err)
	}
	return sessions, turns
}

// run starts a pool on st; the returned function stops it and waits.
func (w *benchWorld) run(st workers.Store, slots int, ends *endCounter) func() {
	return w.runWith(st, workers.Config{Slots: slots}, ends)
}

// runWith starts a pool with cfg (its ID, Wake and Metrics set here).
func (w *benchWorld) runWith(st workers.Store, cfg workers.Config, ends *endCounter) func() {
	cfg.ID, cfg.Wake, cfg.Metrics = w.owner, w.wake, ends
	p := workers.New(cfg, st, instantModel{}, discardLogger())
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	return func() { cancel(); <-done }
}

// snapshot is what the database and the pool have done so far.
type snapshot struct {
	roundTrips, statements, newConns, commits int64
}

func (w *benchWorld) snap(b *testing.B) snapshot {
	b.Helper()
	var commits int64
	// Read on a connection of the pool: this adds one round trip.
	if err := w.pool.QueryRow(w.ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()`).Scan(&commits); err != nil {
		b.Fatalf("stats: %v", err)
	}
	return snapshot{w.counts.RoundTrips.Load(), w.counts.Statements.Load(), w.pool.Stat().NewConnsCount(), commits}
}

// report adds per-task figures of what happened between before and after.
func (w *benchWorld) report(b *testing.B, before, after snapshot, n int) {
	b.ReportMetric(float64(after.roundTrips-before.roundTrips-1)/float64(n), "roundtrips/task")
	b.ReportMetric(float64(after.statements-before.statements-1)/float64(n), "stmts/task")
	b.ReportMetric(float64(after.newConns-before.newConns), "new-conns")
}

// BenchmarkBurnDown queues b.N no-op tasks over 100 sessions, then times
// the pool (default slots) until every outcome is written.
func BenchmarkBurnDown(b *testing.B) {
	for _, slots := range []int{workers.DefaultSlots, 64, 256} {
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) { burnDown(b, slots) })
	}
}

func burnDown(b *testing.B, slots int) {
	w := benchSetup(b)
	w.queue(b, b.N, 100)
	ends := &endCounter{want: int64(b.N), done: make(chan struct{})}
	before := w.snap(b)
	b.ResetTimer()
	start := time.Now()
	stop := w.run(w.store, slots, ends)
	<-ends.done
	took := time.Since(start)
	b.StopTimer()
	stop()
	after := w.snap(b)
	b.ReportMetric(float64(b.N)/took.Seconds(), "tasks/s")
	w.report(b, before, after, b.N)
	if path := os.Getenv("BENCH_STATEMENTS"); path != "" && b.N > 1 {
		// Where the time went, statement by statement (a file: a
		// benchmark's log is cut short).
		_ = os.WriteFile(path, []byte(strings.Join(w.counts.Spent(), "\n")+"\n"), 0o644)
	}
}

// queue queues n tasks over the given number of new sessions.
func (w *benchWorld) queue(b testing.TB, n, over int) {
	b.Helper()
	sessions, turns := w.sessions(b, over)
	if _, err := w.pool.Exec(w.ctx, `
		INSERT INTO tasks (session_id, turn_id, round, role, instruction)
		SELECT s.id, t.id, 1, 'worker', 'task ' || g
		FROM generate_series(0, $1 - 1) g
		JOIN unnest($2::bigint[], $3::bigint[]) WITH ORDINALITY AS x(sid, tid, ord) ON x.ord = g % $4 + 1
		JOIN sessions s ON s.id = x.sid JOIN turns t ON t.id = x.tid`, n, sessions, turns, over); err != nil {
		b.Fatalf("queue tasks: %v", err)
	}
	if _, err := w.pool.Exec(w.ctx, `VACUUM ANALYZE tasks`); err != nil {
		b.Fatalf("vacuum: %v", err)
	}
}

// TestPoolOpensNoConnectionPerTask runs tasks through the real pool with
// lease extensions and wake checks racing every task's end: no store call
// is cancelled by a task ending, so the pool never opens more
// connections than it holds at once.
func TestPoolOpensNoConnectionPerTask(t *testing.T) {
	t.Parallel()
	w := benchSetup(t)
	const n = 300
	w.queue(t, n, 3)
	ends := &endCounter{want: n, done: make(chan struct{})}
	stop := w.runWith(w.store, workers.Config{Slots: 16, Lease: 3 * time.Second, Heartbeat: time.Millisecond}, ends)
	<-ends.done
	stop()
	if got, most := w.pool.Stat().NewConnsCount(), int64(w.pool.Stat().MaxConns()); got > most {
		t.Errorf("the pool opened %d connections for %d tasks, want at most its size (%d)", got, n, most)
	}
	var open int
	if err := w.pool.QueryRow(w.ctx, `SELECT count(*) FROM tasks WHERE state <> 'done'`).Scan(&open); err != nil || open != 0 {
		t.Errorf("%d tasks not done (%v), want 0", open, err)
	}
}

// BenchmarkPickup enqueues b.N tasks one by one at 200 a second (each its
// own committed transaction with its wake, over 10 sessions) to a pool
// with default slots, and reports the time from each enqueue's commit to
// the return of the claim that took it.
func BenchmarkPickup(b *testing.B) {
	w := benchSetup(b)
	sessions, turns := w.sessions(b, 10)
	clock := &claimClock{Store: w.store, claimed: make(map[int64]time.Time)}
	ends := &endCounter{want: int64(b.N), done: make(chan struct{})}
	stop := w.run(clock, workers.DefaultSlots, ends)
	defer stop()
	enqueued := make(map[int64]time.Time, b.N)
	before := w.snap(b)
	b.ResetTimer()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for i := range b.N {
		<-tick.C
		k := i % len(sessions)
		ids, err := w.store.EnqueueTasks(w.ctx, sessions[k], turns[k], 1, []master.NewTask{{Role: "worker", Instruction: "task"}})
		if err != nil {
			b.Fatalf("enqueue: %v", err)
		}
		enqueued[ids[0]] = time.Now()
	}
	<-ends.done
	b.StopTimer()
	after := w.snap(b)
	clock.mu.Lock()
	lat := make([]float64, 0, len(enqueued))
	for id, at := range enqueued {
		lat = append(lat, max(clock.claimed[id].Sub(at), 0).Seconds()*1000)
	}
	clock.mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[min(len(lat)*99/100, len(lat)-1)], "p99-ms")
	b.ReportMetric(lat[len(lat)-1], "max-ms")
	w.report(b, before, after, b.N)
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
