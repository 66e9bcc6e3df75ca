// Package workers runs the team's tasks: it claims queued tasks from the
// store, runs each as its role's LLM conversation that ends in a report
// tool call, with the role's own tools along the way (each call recorded,
// so a task run again does not make it twice; a call that needs a
// person's approval pauses the task), keeps the task's lease alive while
// it runs, and writes the outcome. Workers never reach Discord: nothing
// in this package can post, and a result reaches the thread only inside
// the master's merged reply. (An approval request is posted through the
// outbox by the store, naming the call, never its results.)
package workers

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/callonbot/callon/internal/proc"
	"github.com/callonbot/callon/master"
)

// Store is what the pool needs from Postgres (package store implements
// it). Every method that acts on one task is guarded by its attempt and
// returns master.ErrStale when the task is no longer running under it.
type Store interface {
	// ClaimTasks leases up to n claimable tasks of scope's sessions to
	// workerID for lease.
	ClaimTasks(ctx context.Context, scope master.Scope, workerID string, n int, lease time.Duration) ([]master.Task, error)
	// ExtendLeases extends the leases of the running tasks of refs to
	// now+lease, in one statement that never waits on a row, and returns
	// the ids of those no longer running under their attempt.
	ExtendLeases(ctx context.Context, refs []master.TaskRef, lease time.Duration) ([]int64, error)
	// StaleTasks returns the ids of the tasks of refs no longer running
	// under their attempt, reading only.
	StaleTasks(ctx context.Context, refs []master.TaskRef) ([]int64, error)
	// CompleteTasks ends running tasks with their outcomes, together where
	// it can, and returns one error per completion (nil when written).
	CompleteTasks(ctx context.Context, cs []master.Completion) []error
	// ReleaseTask puts a running task back in the queue at once, for
	// another worker to claim (graceful shutdown).
	ReleaseTask(ctx context.Context, taskID int64, attempt int) error
	// Progress records a PROGRESS signal for a running task.
	Progress(ctx context.Context, taskID int64, attempt int, percent int, note string) error
	// TaskInput returns what the worker of t may see, with the calls of
	// its tools that earlier attempts recorded.
	TaskInput(ctx context.Context, t master.Task) (TaskInput, error)
	// SweepExpired takes back the tasks whose lease expired.
	SweepExpired(ctx context.Context) (requeued, failed int, err error)
	// SpendStore holds each model call's worst case against the
	// session's budgets before it is made, and settles it to what it used
	// when it returns (see master.Meter).
	master.SpendStore

	// PlanToolCalls records the calls of one model answer before any is
	// made, numbered after the task's earlier calls.
	PlanToolCalls(ctx context.Context, taskID int64, attempt, step int, calls []master.PlannedCall) ([]master.CallRecord, error)
	// StartToolCall records that a planned call is about to be made.
	StartToolCall(ctx context.Context, taskID int64, attempt, seq int) error
	// RecordToolCall records a call's result with its TOOL signal.
	RecordToolCall(ctx context.Context, taskID int64, attempt, seq int, res master.ToolResult) error
	// PauseForApproval pauses a running task until a person decides on
	// its call seq, and posts the request ask carries (once per call).
	PauseForApproval(ctx context.Context, taskID int64, attempt, seq int, ask master.ApprovalAsk) (int64, error)
}

// TaskInput is everything a worker is allowed to see for one task: the
// goal, its role, its dependencies with their results. Never the Discord
// thread, never the other roles' prompts. It lives in master so that the
// store can produce it without importing workers.
type TaskInput = master.TaskInput

// Defaults for the zero fields of Config (docs/configuration.md has the
// matching variables).
const (
	// DefaultSlots lets a full team fan out in one wave: a slot waits on
	// the network, not the CPU (CALLON_LLM_CONCURRENCY bounds model calls).
	DefaultSlots       = 16
	DefaultLease       = 30 * time.Second
	DefaultPoll        = 2 * time.Second
	DefaultSweepEvery  = time.Second
	DefaultTaskTimeout = 5 * time.Minute
	DefaultMaxSteps    = 8
	// DefaultApprovalTimeout is CALLON_APPROVAL_TIMEOUT's default.
	DefaultApprovalTimeout = time.Hour
)

// storeTimeout bounds every single store call the pool makes.
const storeTimeout = 5 * time.Second

// maxBackoff caps the wait between failed claims.
const maxBackoff = 30 * time.Second

// Config tunes a Pool. Zero fields take the defaults above.
type Config struct {
	// ID names this worker process in the task rows; default
	// hostname-pid-random.
	ID string
	// Scope is the sessions whose tasks the pool runs: a chat's pool
	// runs its own teams' only, with its own model and tools.
	Scope master.Scope
	// Slots is how many tasks run at once; a claim asks for at most the
	// free ones.
	Slots int
	// Lease is how long a claim (or a heartbeat) keeps a task ours.
	Lease time.Duration
	// Heartbeat is how often the running tasks' leases are extended (all
	// of them in one statement); default Lease/3. A value not below Lease
	// is replaced by the default.
	Heartbeat time.Duration
	// Poll is the fallback claim interval (jittered ±20%), so a lost wake
	// delays work by at most this much: proc.IdlePoll with Wake,
	// DefaultPoll without.
	Poll time.Duration
	// SweepEvery is how often expired leases are taken back; negative
	// disables the sweeper (another process runs it).
	SweepEvery time.Duration
	// TaskTimeout bounds one task; a role's Timeout overrides it.
	TaskTimeout time.Duration
	// WorkerModel is the model of roles that name none.
	WorkerModel string
	// MaxSteps bounds the model calls of one task, progress calls included.
	// Model calls whose tool calls were recorded count across attempts.
	MaxSteps int
	// Budget is the deployment's token budgets: no model call starts for a
	// session past one (see master.Meter).
	Budget master.Budget
	// MaxOutput is the max_tokens of calls whose role sets none
	// (CALLON_MAX_OUTPUT_TOKENS); master.DefaultMaxOutput when zero.
	MaxOutput int
	// Tools runs the tools roles may use; nil gives roles none.
	Tools master.Toolbox
	// ApprovalTimeout is how long a call that needs a person's approval
	// waits for one before it counts as denied.
	ApprovalTimeout time.Duration
	// Ask writes a request's message (its text, and the arguments as a
	// file when they do not fit in it) for a surface: cmd/callon wires
	// bot/render's. Without it, the message names the role and the tool.
	Ask func(a master.Approval) (text string, file master.File)
	// Wake delivers hints that work may be waiting: a session id, or
	// anything else (such as "*") for "any session". The pool then claims,
	// and checks soon that its running tasks are still its own (one read
	// for all of them, however many wakes came meanwhile), which is how a
	// cancellation made by another process arrives.
	// Nil means polling only.
	Wake <-chan string
	// Metrics counts the pool's work; nil counts nothing.
	Metrics Metrics
	// Vision says whether a model is given the images handed to a task;
	// nil means none is (the worker is told their names).
	Vision func(model string) bool
}

// Metrics receives what the pool measures (package metrics implements
// it). Its methods must not block.
type Metrics interface {
	// ToolCalled counts a worker's tool call by tool and result ("ok" or
	// "invalid"); caller is "worker".
	ToolCalled(caller, tool, result string)
	// TaskEnded counts a task whose outcome was written, by its role and
	// state, with its time in this worker.
	TaskEnded(role string, state master.TaskState, took time.Duration)
}

// noMetrics discards.
type noMetrics struct{}

func (noMetrics) ToolCalled(string, string, string)                 {}
func (noMetrics) TaskEnded(string, master.TaskState, time.Duration) {}

func (c Config) withDefaults() Config {
	c.ID = cmp.Or(c.ID, proc.NewOwner())
	c.Slots = cmp.Or(max(c.Slots, 0), DefaultSlots)
	c.Lease = cmp.Or(max(c.Lease, 0), DefaultLease)
	if c.Heartbeat <= 0 || c.Heartbeat >= c.Lease {
		c.Heartbeat = c.Lease / 3
	}
	switch {
	case c.Poll > 0:
	case c.Wake != nil:
		c.Poll = proc.IdlePoll
	default:
		c.Poll = DefaultPoll
	}
	c.SweepEvery = cmp.Or(c.SweepEvery, DefaultSweepEvery)
	c.TaskTimeout = cmp.Or(max(c.TaskTimeout, 0), DefaultTaskTimeout)
	c.MaxSteps = cmp.Or(max(c.MaxSteps, 0), DefaultMaxSteps)
	c.ApprovalTimeout = cmp.Or(max(c.ApprovalTimeout, 0), DefaultApprovalTimeout)
	return c
}

// Pool claims tasks and runs each on its own goroutine, at most
// Config.Slots at once. It also runs the lease sweeper.
type Pool struct {
	cfg     Config
	store   Store
	meter   master.Meter // the model, every call charged as it returns
	logger  *slog.Logger
	metrics Metrics

	mu      sync.Mutex
	running map[int64]*running // by task id
	started bool

	// checkNow asks the lease keeper to check the running tasks (holds at
	// most one request: requests coalesce).
	checkNow chan struct{}

	// ends gathers the outcomes to write, so that the outcomes of tasks
	// ending together are written in one transaction (see end).
	ends *proc.Group[master.Completion, error]
}

// running is one task in flight.
type running struct {
	task master.Task
	ctx  context.Context
	// cancel stops the task; the cause decides what is written for it.
	cancel context.CancelCauseFunc
}

// New returns a pool; call Run.
func New(cfg Config, store Store, llm master.LLM, logger *slog.Logger) *Pool {
	cfg = cfg.withDefaults()
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	log := logger.With("component", "workers", "worker_id", cfg.ID)
	p := &Pool{
		cfg:     cfg,
		store:   store,
		meter:   master.Meter{Store: store, LLM: llm, MaxOutput: cfg.MaxOutput, Log: log},
		logger:  log,
		metrics: cfg.Metrics,
		running: make(map[int64]*running),

		checkNow: make(chan struct{}, 1),
	}
	p.ends = &proc.Group[master.Completion, error]{Max: maxEnds, Write: func(ctx context.Context, cs []master.Completion) []error {
		return p.store.CompleteTasks(ctx, cs)
	}}
	return p
}

// Causes of a task's cancellation, other than shutdown.
var (
	// errSessionCancelled: CancelSession stopped the task.
	errSessionCancelled = errors.New("session cancelled")
	// errTaskTimeout: the task's deadline passed.
	errTaskTimeout = errors.New("task timed out")
)

// Run claims and runs tasks until ctx is done. Then it cancels the
// running tasks, releases them for another process to take at once, and
// returns nil after every goroutine it started has ended. A task whose
// release fails is not lost: its lease expires and the sweeper requeues it.
func (p *Pool) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.started {
		p.mu.Unlock()
		return errors.New("workers: Run called twice")
	}
	p.started = true
	p.mu.Unlock()

	p.logger.Info("worker pool started", "slots", p.cfg.Slots)
	defer p.logger.Info("worker pool stopped")
	var wg sync.WaitGroup
	defer wg.Wait()
	if p.cfg.SweepEvery > 0 {
		wg.Go(func() { p.sweep(ctx) })
	}
	wg.Go(func() { p.keepLeases(ctx) })

	// finished holds one pending "a slot is free" signal: free slots are
	// counted from p.running, so signals may coalesce.
	finished := make(chan struct{}, 1)
	wake := p.cfg.Wake
	failures := 0
	claim := true
	// full says the last claim took every free slot (or there was none):
	// work may be left over for a slot that frees. A claim that left
	// slots free found every claimable task: a slot freeing then needs no
	// claim (new work comes with a wake, or the poll).
	full := true
	for {
		if claim {
			free := p.cfg.Slots - p.inFlight()
			tasks, err := p.claim(ctx)
			full = err != nil || len(tasks) >= free
			switch {
			case ctx.Err() != nil:
				// Shutting down: the claim's error is ours.
			case err != nil:
				failures++
				if failures == 1 {
					p.logger.Warn("claim failed; retrying with backoff", "err", err)
				} else {
					p.logger.Debug("claim failed again", "err", err, "failures", failures)
				}
			default:
				if failures > 0 {
					p.logger.Info("claiming again", "failed_attempts", failures)
				}
				failures = 0
			}
			for _, r := range tasks {
				wg.Go(func() {
					free := func() {
						p.unregister(r)
						select {
						case finished <- struct{}{}:
						default:
						}
					}
					p.runTask(ctx, r, free)
					free()
				})
			}
		}

		// Any wake ends a backoff early: after an outage, the listener's
		// reconnection wake is the first sign that Postgres is back.
		delay := proc.Jitter(p.cfg.Poll)
		if failures > 0 {
			delay = proc.Backoff(failures, p.cfg.Poll, maxBackoff)
		}
		timer := time.NewTimer(delay)
		claim = true
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case hint, ok := <-wake:
			if !ok {
				wake, claim = nil, false
				break
			}
			p.checkRunning(hint)
		case <-finished:
			claim = full || wake == nil
		case <-timer.C:
		}
		timer.Stop()
	}
}

// claim asks the store for as many tasks as there are free slots and
// registers them as running.
func (p *Pool) claim(ctx context.Context) ([]*running, error) {
	free := p.cfg.Slots - p.inFlight()
	if free <= 0 {
		return nil, nil
	}
	cctx, cancel := context.WithTimeout(ctx, storeTimeout)
	tasks, err := p.store.ClaimTasks(cctx, p.cfg.Scope, p.cfg.ID, free, p.cfg.Lease)
	cancel()
	if err != nil {
		return nil, err
	}
	if len(tasks) > free {
		// Never run more than the slots, whatever the store did.
		p.logger.Error("store returned more tasks than asked; releasing the extra", "asked", free, "got", len(tasks))
		for _, t := range tasks[free:] {
			p.release(ctx, t, p.taskLogger(t))
		}
		tasks = tasks[:free]
	}
	out := make([]*running, 0, len(tasks))
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, t := range tasks {
		tctx, cancel := context.WithCancelCause(ctx)
		r := &running{task: t, ctx: tctx, cancel: cancel}
		p.running[t.ID] = r
		out = append(out, r)
	}
	if len(out) > 0 {
		p.logger.Debug("claimed tasks", "count", len(out), "free", free)
	}
	return out, nil
}

func (p *Pool) inFlight() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.running)
}

func (p *Pool) unregister(r *running) {
	r.cancel(nil)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running[r.task.ID] == r {
		delete(p.running, r.task.ID)
	}
}

// CancelSession stops this process's running tasks of a session at once:
// their model calls are cancelled and nothing is written for them, so
// call it once the store has ended the session's tasks. It returns how
// many tasks it stopped. Other processes find out through the session's
// wake (see Config.Wake) or their next heartbeat.
func (p *Pool) CancelSession(sessionID int64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.running {
		if r.task.SessionID == sessionID {
			r.cancel(errSessionCancelled)
			n++
		}
	}
	return n
}

// checkRunning asks the lease keeper to check the running tasks when a
// wake hint concerns one of them: a hint is a session id, anything else
// means every session. A task cancelled elsewhere then stops within one
// read. Requests coalesce: however many wakes arrive, at most one check
// is pending.
func (p *Pool) checkRunning(hint string) {
	session, err := strconv.ParseInt(hint, 10, 64)
	all := err != nil
	p.mu.Lock()
	concerned := false
	for _, r := range p.running {
		if all || r.task.SessionID == session {
			concerned = true
			break
		}
	}
	p.mu.Unlock()
	if concerned {
		select {
		case p.checkNow <- struct{}{}:
		default:
		}
	}
}

// sweep takes back expired leases every SweepEvery until ctx is done.
func (p *Pool) sweep(ctx context.Context) {
	t := time.NewTicker(p.cfg.SweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, storeTimeout)
		requeued, failed, err := p.store.SweepExpired(sctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			p.logger.Warn("sweep failed", "err", err)
		case requeued+failed > 0:
			p.logger.Info("swept expired tasks", "requeued", requeued, "failed", failed)
		}
	}
}

// taskLogger is the pool's logger with one task's fields.
func (p *Pool) taskLogger(t master.Task) *slog.Logger {
	return p.logger.With("task_id", t.ID, "role", t.Role, "session_id", t.SessionID, "turn_id", t.TurnID, "attempt", t.Attempt)
}
