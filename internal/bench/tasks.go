package bench

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/workers"
)

// taskWorld is a store with one session whose master lease the bench
// holds, so that it can enqueue tasks the way the master does (Delegate,
// one round after another), and a real workers.Pool running them with an
// instant in-process model.
type taskWorld struct {
	st    *store.Store
	drop  func(context.Context) error
	guard master.Guard

	mu      sync.Mutex
	called  map[int]time.Time // task number to when its model call began
	ended   int
	changed chan struct{} // closed and replaced when ended changes
}

const benchOwner = "bench-master"

func (b *bench) newTaskWorld(ctx context.Context) (*taskWorld, error) {
	url, drop, err := store.CreateScratchDatabase(ctx, b.deps.DatabaseURL, "callon_bench_")
	if err != nil {
		return nil, err
	}
	tw := &taskWorld{drop: drop, called: map[int]time.Time{}, changed: make(chan struct{})}
	if err := tw.setup(ctx, url); err != nil {
		tw.close()
		return nil, err
	}
	return tw, nil
}

func (tw *taskWorld) setup(ctx context.Context, url string) error {
	st, err := store.Open(ctx, url, nil)
	if err != nil {
		return err
	}
	tw.st = st
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	g, err := tw.team(ctx, 0)
	if err != nil {
		return err
	}
	tw.guard = g
	return nil
}

// team starts the bench's team number n, with a turn whose master lease
// the bench holds, and returns the guard to delegate under.
func (tw *taskWorld) team(ctx context.Context, n int) (master.Guard, error) {
	thread := strconv.Itoa(1000 + n)
	sess, err := tw.st.StartSession(ctx, master.Session{GuildID: "1", ChannelID: "2", ThreadID: thread, OwnerID: "4", Goal: "bench"},
		master.DefaultRoles(), "", "", master.SessionCaps{})
	if err != nil {
		return master.Guard{}, err
	}
	if _, _, err := tw.st.RecordTurn(ctx, master.Turn{SessionID: sess.ID, MessageID: strconv.Itoa(5000 + n), GuildID: "1", ChannelID: thread,
		AuthorID: "4", Content: "go"}, master.Admission{}); err != nil {
		return master.Guard{}, err
	}
	if ok, err := tw.st.AcquireMaster(ctx, sess.ID, benchOwner, time.Hour); err != nil || !ok {
		return master.Guard{}, fmt.Errorf("acquire the master lease: %v", err)
	}
	turn, err := tw.st.OpenTurn(ctx, sess.ID)
	if err != nil {
		return master.Guard{}, err
	}
	return master.Guard{SessionID: sess.ID, TurnID: turn.ID, Round: turn.Round, Owner: benchOwner}, nil
}

func (tw *taskWorld) close() {
	if tw.st != nil {
		tw.st.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = tw.drop(ctx) // a scratch database left behind is removed with the next cleanup
}

// enqueue commits tasks numbered from..from+n-1 as the next round.
func (tw *taskWorld) enqueue(ctx context.Context, from, n int) error {
	return tw.enqueueAs(ctx, &tw.guard, from, n)
}

// enqueueAs commits tasks numbered from..from+n-1 as g's next round.
func (tw *taskWorld) enqueueAs(ctx context.Context, g *master.Guard, from, n int) error {
	tasks := make([]master.NewTask, n)
	for i := range tasks {
		tasks[i] = master.NewTask{Role: roles[i%len(roles)], Instruction: "#" + strconv.Itoa(from+i) + "#"}
	}
	if _, err := tw.st.Delegate(ctx, *g, tasks); err != nil {
		return err
	}
	g.Round++
	return nil
}

// Chat is the pool's model: it reports done at once, noting when the
// task's call began.
func (tw *taskWorld) Chat(_ context.Context, req master.ChatRequest) (master.ChatResponse, error) {
	now := time.Now()
	for _, m := range req.Messages {
		if m.Role != master.RoleUser {
			continue
		}
		if _, rest, ok := strings.Cut(m.Content, "#"); ok {
			if num, _, ok := strings.Cut(rest, "#"); ok {
				if n, err := strconv.Atoi(num); err == nil {
					tw.mu.Lock()
					if _, seen := tw.called[n]; !seen {
						tw.called[n] = now
					}
					tw.mu.Unlock()
				}
			}
		}
	}
	return master.ChatResponse{ToolCalls: []master.ToolCall{{ID: "call_1", Name: "report",
		Arguments: `{"status":"done","result":"ok"}`}}}, nil
}

// ToolCalled implements workers.Metrics.
func (tw *taskWorld) ToolCalled(string, string, string) {}

// TaskEnded implements workers.Metrics: it counts the tasks written.
func (tw *taskWorld) TaskEnded(string, master.TaskState, time.Duration) {
	tw.mu.Lock()
	tw.ended++
	close(tw.changed)
	tw.changed = make(chan struct{})
	tw.mu.Unlock()
}

// waitEnded waits until n tasks have ended, or ctx ends.
func (tw *taskWorld) waitEnded(ctx context.Context, n int, limit time.Duration) error {
	deadline := time.After(limit)
	for {
		tw.mu.Lock()
		ended, ch := tw.ended, tw.changed
		tw.mu.Unlock()
		if ended >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("%d of %d tasks ended within %s", ended, n, limit)
		}
	}
}

// runPool runs the real worker pool, woken by the store's listener as in
// callon, until the returned function is called.
func (tw *taskWorld) runPool(ctx context.Context) (stop func()) {
	return tw.runPoolSlots(ctx, config.DefaultWorkerSlots)
}

// runPoolSlots is runPool with slots slots.
func (tw *taskWorld) runPoolSlots(ctx context.Context, slots int) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	listener := tw.st.NewListener()
	wake, _ := listener.Subscribe(store.WakeTasks)
	pool := workers.New(workers.Config{
		ID: "bench-worker", Slots: slots, Wake: wake, Metrics: tw,
	}, tw.st, tw, slog.New(slog.DiscardHandler))
	var wg sync.WaitGroup
	wg.Go(func() { _ = listener.Run(ctx) }) // ends with ctx; the stage reads what it measured
	wg.Go(func() { _ = pool.Run(ctx) })
	return func() { cancel(); wg.Wait() }
}

// pickup measures enqueue commit → the worker's model call, one task at
// a time at PickupRate per second, through the real pool.
func (b *bench) pickup(ctx context.Context) ([]StageResult, error) {
	tw, err := b.newTaskWorld(ctx)
	if err != nil {
		return nil, err
	}
	defer tw.close()
	stop := tw.runPool(ctx)
	defer stop()
	n := b.sizes.PickupTasks
	committed := make([]time.Time, n)
	tick := time.NewTicker(time.Second / time.Duration(max(1, b.sizes.PickupRate)))
	defer tick.Stop()
	for i := range n {
		if err := tw.enqueue(ctx, i, 1); err != nil {
			return nil, err
		}
		committed[i] = time.Now()
		if i < n-1 {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	if err := tw.waitEnded(ctx, n, 2*time.Minute); err != nil {
		return nil, err
	}
	tw.mu.Lock()
	var lat []time.Duration
	for i, c := range committed {
		if at, ok := tw.called[i]; ok {
			lat = append(lat, at.Sub(c))
		}
	}
	tw.mu.Unlock()
	return []StageResult{{Name: "pickup", Samples: len(lat), Latency: dist(lat),
		What:   fmt.Sprintf("task pickup: enqueue commit → the worker's model call, %d tasks/s, real pool (%d slots)", b.sizes.PickupRate, config.DefaultWorkerSlots),
		Values: []Value{{"rate", float64(b.sizes.PickupRate), "tasks/s"}}}}, nil
}

// burndown runs BurnTasks no-op tasks, enqueued beforehand, through the
// real pool's claims and completions.
func (b *bench) burndown(ctx context.Context) ([]StageResult, error) {
	tw, err := b.newTaskWorld(ctx)
	if err != nil {
		return nil, err
	}
	defer tw.close()
	n := b.sizes.BurnTasks
	// The tasks of a busy deployment: BurnTeams teams (the first is the
	// world's), each given rounds as a master delegates them, at most 25
	// tasks each (the store's bound on a round), in turn.
	guards := []*master.Guard{&tw.guard}
	for i := 1; i < cmp.Or(b.sizes.BurnTeams, 1); i++ {
		g, err := tw.team(ctx, i)
		if err != nil {
			return nil, err
		}
		guards = append(guards, &g)
	}
	const batch = 25
	for i, r := 0, 0; i < n; i, r = i+batch, r+1 {
		if err := tw.enqueueAs(ctx, guards[r%len(guards)], i, min(batch, n-i)); err != nil {
			return nil, err
		}
	}
	// Statistics as autovacuum would have them by now: a fresh database
	// filled a moment ago is otherwise planned as if it were empty.
	if err := tw.st.Analyze(ctx); err != nil {
		return nil, err
	}
	began := time.Now()
	slots := cmp.Or(b.sizes.BurnSlots, config.DefaultWorkerSlots)
	stop := tw.runPoolSlots(ctx, slots)
	defer stop()
	if err := tw.waitEnded(ctx, n, 30*time.Minute); err != nil {
		return nil, err
	}
	took := time.Since(began)
	return []StageResult{{Name: "burndown", Samples: n,
		What: fmt.Sprintf("no-op tasks through the real pool's claims, model-call holds and completions (%d slots, %d teams, instant model)",
			slots, cmp.Or(b.sizes.BurnTeams, 1)),
		Values: []Value{{"throughput", float64(n) / took.Seconds(), "tasks/s"}, {"took", took.Seconds(), "s"}}}}, nil
}
