package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

var (
	// A bug that one sequence in 30 reaches is missed by n sequences with
	// probability (29/30)^n: 0.6 % for 150.
	sequences = flag.Int("sequences", 150, "how many random sequences TestTurnStateMachine runs")
	events    = flag.Int("events", 80, "events per sequence")
	seedFlag  = flag.Uint64("seed", 0, "run only the sequence with this seed")
	// Sequences wait on Postgres and the fake Discord far more than they
	// compute: more run at once than -parallel (the number of CPUs) lets
	// subtests.
	atOnce = flag.Int("at-once", 6, "how many sequences run at once")
)

// Limits the sequences run under: small, so that they are reached.
const (
	maxCalls   = 12
	maxRounds  = 3
	maxRetries = 2
	maxQueued  = 3 // a thread's messages waiting or being answered
)

// TestTurnStateMachine runs seeded random sequences of events against the
// real store and orchestrator, with the outbox posting to the fake
// Discord through the real Messenger, and checks after every event that
// no turn exceeds the master call ceiling or its retry bound, a session
// runs one turn at a time and at most one waits for an answer (the
// latest), queued turns start in message order, the master never
// decides while its round has unfinished tasks, a stale worker's or
// master's outcome changes nothing, and what Discord holds agrees with
// the outbox (see checkDelivery); and, once the sequence has settled,
// that every user message ended with its reply, a question (answered or
// waiting), a refusal (beyond the thread's queue: never answered), or as
// the answer to a question; that no turn and no task is left open; and
// that nothing waits in the outbox. A failure names its seed: run it
// again with -args -seed=N.
func TestTurnStateMachine(t *testing.T) {
	t.Parallel()
	seeds := make([]uint64, *sequences)
	base := uint64(time.Now().UnixNano())
	for i := range seeds {
		seeds[i] = base + uint64(i)
	}
	if *seedFlag != 0 {
		seeds = []uint64{*seedFlag}
	}
	slots := make(chan struct{}, max(*atOnce, 1))
	var wg sync.WaitGroup
	for _, seed := range seeds {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
				s := newSequence(t, seed)
				s.run(*events)
			})
		})
	}
	wg.Wait()
}

// sequence is one run: a store on its own database, one session, the
// orchestrator, a scripted master model, the test acting as the workers,
// and a messenger that records every post.
type sequence struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	ctx     context.Context
	st      *store.Store
	pool    *pgxpool.Pool
	svc     *master.Service
	orch    *master.Orchestrator
	disp    *master.Outbox // the outbox's sender
	disp2   *master.Outbox // a second sender (another process)
	fetcher *master.Fetcher
	model   *model
	discord *discord
	thread  string
	session master.Session
	log     *slog.Logger
	errs    *failures

	owner int // the orchestrator's incarnation
	// inquisitive sequences (a third) have workers that mostly need
	// information and a master that mostly asks the user.
	inquisitive bool
	// crashy sequences (another third) crash in the middle of most model
	// calls: a crash loop, which only the ceiling on calls ends.
	crashy    bool
	crashes   bool
	crashStep context.CancelFunc
	// flaky sequences (a quarter of those neither inquisitive nor
	// crashy... see newSequence) have a model that is often unreachable:
	// turns give up after their retries.
	flaky bool
	// depth counts the actors running inside another's model call (a
	// process taking the session over): they do not nest further.
	depth int
	// stalled are tasks claimed by workers that went silent; they may
	// come back with their outcome after the task was claimed again.
	stalled []master.Task
	// dissolvedAt is how many messages the bot had posted in the thread
	// when the team was dissolved; -1 while it is not.
	dissolvedAt int
	texts       int
	nextID      int64
	messages    []string        // user message ids, in the order posted
	answers     map[string]bool // messages recorded as answers to a question
	downloads   map[string]int  // downloads of each file, by URL
	trace       []string
}

func newSequence(t *testing.T, seed uint64) *sequence {
	url := storetest.URL(t)
	st := storetest.Open(t, url)
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := &sequence{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, seed^0x5eed)), ctx: t.Context(), st: st,
		pool: pool, errs: &failures{}, answers: map[string]bool{}, downloads: map[string]int{}, crashes: true,
		nextID: master.Snowflake(time.Now()), dissolvedAt: -1}
	s.inquisitive, s.crashy, s.flaky = seed%4 == 0, seed%4 == 1, seed%4 == 2
	s.log = slog.New(s.errs)
	s.model = &model{seq: s, perTurn: map[string]int{}, failed: map[int64]int{}}
	s.watchTransitions()
	s.discord = newDiscord(s)
	s.thread = s.discord.thread()
	s.svc = master.NewService(master.ServiceConfig{MaxQueued: maxQueued}, st, nil)
	sess, _, err := s.svc.StartSession(s.ctx, master.NewSession{GuildID: s.discord.dc.GuildID(), ChannelID: s.discord.dc.ChannelID("general"),
		ThreadID: s.thread, OwnerID: "u", Goal: "ship it"})
	if err != nil {
		t.Fatal(err)
	}
	s.session = sess
	s.restart()
	quiet := slog.New(slog.DiscardHandler) // the senders' faults are injected
	s.disp = master.NewOutbox(master.OutboxConfig{Owner: "sender"}, st, s.discord, quiet)
	s.disp2 = master.NewOutbox(master.OutboxConfig{Owner: "sender2"}, st, s.discord, quiet)
	// One file at a time, so the CDN's answers follow the seed.
	s.fetcher = master.NewFetcher(master.FetcherConfig{Owner: "fetcher", Batch: 1}, st, cdn{s}, s.log)
	return s
}

// restart replaces the orchestrator: a new process (crash) or the same
// one after its rests are over.
func (s *sequence) restart() {
	s.orch = s.newOrchestrator(fmt.Sprint("p", s.owner))
}

func (s *sequence) newOrchestrator(owner string) *master.Orchestrator {
	return master.NewOrchestrator(master.OrchestratorConfig{
		Owner: owner, Model: "m", MaxRounds: maxRounds, Retries: maxRetries,
		RetryDelay: time.Millisecond, MaxCalls: maxCalls, Lease: time.Minute,
	}, s.st, s.model, s.log)
}

// crash is the orchestrator's process dying in the middle of a step: its
// step context ends, and a new process with another name takes over once
// the old lease lapses.
func (s *sequence) crash() {
	if s.crashStep != nil {
		s.crashStep()
	}
	s.owner++
	s.exec(`UPDATE sessions SET master_lease_until = now() - interval '1 second' WHERE master_owner IS NOT NULL`)
}

// takeOver is another process taking the session over while this one's
// master waits for its model (this one looked dead: its lease lapsed):
// the other steps the session, and this one's decision comes back after.
func (s *sequence) takeOver() {
	s.trace = append(s.trace, "  another process takes the session over during a master call")
	s.exec(`UPDATE sessions SET master_lease_until = now() - interval '1 second' WHERE id = $1`, s.session.ID)
	s.newOrchestrator(fmt.Sprint("q", s.owner)).Step(s.ctx, s.session.ID)
}

// runningTurn is the session's running turn, 0 when none.
func (s *sequence) runningTurn() int64 {
	var id int64
	err := s.pool.QueryRow(s.ctx, `SELECT id FROM turns WHERE session_id = $1 AND state = 'running'`, s.session.ID).Scan(&id)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		s.fatalf("running turn: %v", err)
	}
	return id
}

func (s *sequence) fatalf(format string, args ...any) {
	s.t.Helper()
	tail := s.trace
	if len(tail) > 30 {
		tail = tail[len(tail)-30:]
	}
	s.t.Fatalf("seed %d: %s\nlast events:\n  %s\n(run again: go test ./sim -run TestTurnStateMachine -args -seed=%d)",
		s.seed, fmt.Sprintf(format, args...), strings.Join(tail, "\n  "), s.seed)
}

func (s *sequence) exec(sql string, args ...any) {
	s.t.Helper()
	if _, err := s.pool.Exec(s.ctx, sql, args...); err != nil {
		s.fatalf("%s: %v", sql, err)
	}
}

// run plays n random events, checking the invariants after each, then
// lets the sequence settle and checks the end state.
func (s *sequence) run(n int) {
	type event struct {
		name   string
		weight int
		do     func()
	}
	evs := []event{
		{"message", 14, s.message},
		{"flood", 2, s.flood},
		{"step", 30, s.step},
		{"work", 25, s.work},
		{"expire", 3, s.expire},
		{"crash", 3, func() { s.crash(); s.restart() }},
		{"time", 5, s.timePasses},
		{"flush", 15, s.flush},
		{"redeliver", 2, s.redeliver},
		{"dissolve", 1, s.dissolve},
		{"fetch", 8, s.fetch},
		{"decide", 6, s.decide},
		{"approvals expire", 2, s.expireApprovals},
		{"stall", 3, s.stall},
		{"late worker", 3, s.late},
		{"stale worker", 2, s.staleWorker},
		{"outage", 3, s.outage},
	}
	total := 0
	for _, e := range evs {
		total += e.weight
	}
	// A quarter of the sequences end with the team dissolved while replies
	// wait for Discord.
	dissolveAt := -1
	if s.seed%4 == 3 {
		dissolveAt = n/2 + s.rng.IntN(n/2)
	}
	for i := range n {
		if i == dissolveAt {
			s.trace = append(s.trace, fmt.Sprintf("%d dissolve while replies wait", i))
			s.dissolveWhileRepliesWait()
			s.check()
			continue
		}
		r := s.rng.IntN(total)
		for _, e := range evs {
			if r < e.weight {
				s.trace = append(s.trace, fmt.Sprintf("%d %s", i, e.name))
				e.do()
				s.check()
				break
			}
			r -= e.weight
		}
	}
	s.crashes = false
	s.settle()
	s.checkEnd()
}

// message posts a user message, now and then with an id older than the
// last one (recorded late, as after a database blip). Users mostly wait
// for the answer to their last message before they write again.
func (s *sequence) message() {
	var busy bool
	if err := s.pool.QueryRow(s.ctx, `SELECT EXISTS (SELECT 1 FROM turns WHERE session_id = $1 AND state IN ('queued', 'running'))`,
		s.session.ID).Scan(&busy); err != nil {
		s.fatalf("message: %v", err)
	}
	if busy && s.rng.IntN(4) > 0 {
		return
	}
	s.post()
}

// flood is a user posting several messages at once, however busy the
// team is: the thread's queue refuses the ones beyond it.
func (s *sequence) flood() {
	for range 2 + s.rng.IntN(4) {
		s.post()
	}
}

// post posts one message.
func (s *sequence) post() {
	s.nextID += 1 << 22
	id := s.nextID
	if s.rng.IntN(10) == 0 {
		id -= int64(s.rng.IntN(3)+1) << 22
	}
	msgID := strconv.FormatInt(id, 10)
	content := s.text("message")
	if _, err := s.svc.HandleMessage(s.ctx, master.Incoming{ID: msgID, GuildID: s.session.GuildID, ChannelID: s.thread, AuthorID: "u", Content: content,
		Attachments: s.files()}); err != nil {
		s.fatalf("HandleMessage: %v", err)
	}
	var state string
	if err := s.pool.QueryRow(s.ctx, `SELECT state FROM turns WHERE message_id = $1`, msgID).Scan(&state); err == nil {
		s.messages = append(s.messages, msgID)
		if state == string(master.TurnDone) {
			s.answers[msgID] = true // it went back to workers that asked
		}
	}
}

func (s *sequence) redeliver() {
	if len(s.messages) == 0 {
		return
	}
	id := s.messages[s.rng.IntN(len(s.messages))]
	if _, err := s.svc.HandleMessage(s.ctx, master.Incoming{ID: id, GuildID: s.session.GuildID, ChannelID: s.thread, AuthorID: "u", Content: "again"}); err != nil {
		s.fatalf("HandleMessage again: %v", err)
	}
}

func (s *sequence) step() {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	s.crashStep = cancel
	s.orch.Step(ctx, s.session.ID)
	s.crashStep = nil
}

// work is a worker claiming one task and ending it, or stalling on it.
func (s *sequence) work() {
	tasks, err := s.st.ClaimTasks(s.ctx, master.Scope{}, "worker", 1, time.Hour)
	if err != nil {
		s.fatalf("ClaimTasks: %v", err)
	}
	if len(tasks) == 0 || s.rng.IntN(20) == 0 {
		s.stalled = append(s.stalled, tasks...) // nothing to do, or it stalls until its lease expires
		return
	}
	if s.rng.IntN(6) == 0 {
		s.pause(tasks[0]) // a call of one of its tools needs a person's approval
		return
	}
	out := workerOutcome(s.rng, s.inquisitive, s.text)
	if err := s.finish(tasks[0], out); err != nil && !errors.Is(err, master.ErrStale) {
		s.fatalf("complete task: %v", err)
	}
}

// finish writes a worker's outcome for t through one of the store's
// paths, chosen at random: alone (CompleteTask), in a batch as the
// worker pool writes it (CompleteTasks with the task's session: a done
// outcome is then one statement), or in a batch without the session (a
// transaction). Each must refuse a stale attempt alike.
func (s *sequence) finish(t master.Task, out master.Outcome) error {
	ref := master.TaskRef{ID: t.ID, Attempt: t.Attempt}
	switch s.rng.IntN(3) {
	case 0:
		_, err := s.st.CompleteTask(s.ctx, t.ID, t.Attempt, out)
		return err
	case 1:
		return s.st.CompleteTasks(s.ctx, []master.Completion{{Task: ref, Outcome: out, SessionID: t.SessionID}})[0]
	default:
		return s.st.CompleteTasks(s.ctx, []master.Completion{{Task: ref, Outcome: out}})[0]
	}
}

// pause makes a claimed task plan a call of a tool that needs a
// person's approval, and pause for it.
func (s *sequence) pause(t master.Task) {
	recs, err := s.st.PlanToolCalls(s.ctx, t.ID, t.Attempt, 0, []master.PlannedCall{{CallID: "c", Name: "ops__deploy", Args: `{"env":"prod"}`}})
	if err != nil {
		s.fatalf("PlanToolCalls: %v", err)
	}
	if _, err := s.st.PauseForApproval(s.ctx, t.ID, t.Attempt, recs[0].Seq, master.ApprovalAsk{Timeout: time.Hour, Text: "approve?"}); err != nil {
		s.fatalf("PauseForApproval: %v", err)
	}
}

// decide is a person approving or denying one pending request, now and
// then twice.
func (s *sequence) decide() {
	var ids []int64
	rows, err := s.pool.Query(s.ctx, `SELECT id FROM approvals WHERE state = 'pending' ORDER BY id`)
	if err == nil {
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	}
	if err != nil {
		s.fatalf("pending approvals: %v", err)
	}
	if len(ids) == 0 {
		return
	}
	id := ids[s.rng.IntN(len(ids))]
	for range 1 + s.rng.IntN(2) {
		if _, err := s.st.DecideApproval(s.ctx, id, s.rng.IntN(2) == 0, "u"); err != nil {
			s.fatalf("DecideApproval: %v", err)
		}
	}
}

// expireApprovals lets every pending request's time run out, and sweeps.
func (s *sequence) expireApprovals() {
	s.exec(`UPDATE approvals SET expires_at = now() - interval '1 second' WHERE state = 'pending'`)
	if _, _, err := s.st.SweepExpired(s.ctx); err != nil {
		s.fatalf("SweepExpired: %v", err)
	}
}

// expire lapses every running task's lease and sweeps, as after a
// worker died.
func (s *sequence) expire() {
	s.exec(`UPDATE tasks SET lease_until = now() - interval '1 second' WHERE state = 'running'`)
	s.exec(`UPDATE attachments SET lease_until = now() - interval '1 second' WHERE lease_until IS NOT NULL`)
	if _, _, err := s.st.SweepExpired(s.ctx); err != nil {
		s.fatalf("SweepExpired: %v", err)
	}
}

// timePasses lets every delay run out: retries put off, rests after
// failed steps.
func (s *sequence) timePasses() {
	s.exec(`UPDATE turns SET not_before = NULL`)
	s.exec(`UPDATE attachments SET not_before = NULL`)
	s.exec(`UPDATE outbox SET lease_until = NULL WHERE state = 'pending' AND lease_owner IS NULL`) // retries come due
	s.restart()
}

// flush is a sender delivering what it can, a few batches (or probes).
func (s *sequence) flush() {
	for range 10 {
		n, err := s.disp.Flush(s.ctx)
		if err != nil {
			s.fatalf("Flush: %v", err)
		}
		if n == 0 {
			return
		}
	}
}

func (s *sequence) dissolve() {
	if s.rng.IntN(4) > 0 {
		return // rarer than its weight: a dissolved team does little more
	}
	s.dissolveNow()
}

// dissolveNow dissolves the team, as /dissolve does.
func (s *sequence) dissolveNow() {
	before := len(s.discord.posted())
	err := s.st.Dissolve(s.ctx, s.session.ID, "dissolved by the sequence", nil, nil)
	if err != nil && !errors.Is(err, master.ErrNotFound) {
		s.fatalf("Dissolve: %v", err)
	}
	if err == nil {
		s.dissolvedAt = before
	}
}

// dissolveWhileRepliesWait is the team dissolved while Discord is down
// and its answers wait in the outbox: a message, the team's work on it,
// a send that fails, the dissolve, Discord back and the outbox flushed.
// Nothing of a turn may be posted after the dissolve.
func (s *sequence) dissolveWhileRepliesWait() {
	s.discord.outage(true)
	s.post()
	for range 4 {
		s.step()
		s.work()
		s.work()
	}
	s.step()
	s.flush()
	s.dissolveNow()
	s.discord.outage(false)
	s.flush()
	s.disp2.Flush(s.ctx)
}

// outage starts an outage of Discord's message posts, or ends one.
func (s *sequence) outage() {
	s.discord.mu.Lock()
	down := s.discord.down
	s.discord.mu.Unlock()
	s.discord.outage(!down)
}

// stall is a worker claiming a task and going silent: its lease will
// lapse, and it may come back later (late).
func (s *sequence) stall() {
	tasks, err := s.st.ClaimTasks(s.ctx, master.Scope{}, "stalled worker", 1, time.Hour)
	if err != nil {
		s.fatalf("ClaimTasks: %v", err)
	}
	s.stalled = append(s.stalled, tasks...)
}

// late is a stalled worker coming back with its outcome: accepted only
// while its task still runs under the attempt it claimed.
func (s *sequence) late() {
	if len(s.stalled) == 0 {
		return
	}
	i := s.rng.IntN(len(s.stalled))
	t := s.stalled[i]
	s.stalled = append(s.stalled[:i], s.stalled[i+1:]...)
	s.complete(t)
}

// staleWorker is a worker that stalls on a task, whose lease lapses, the
// task claimed again by another worker that is still at it, and then the
// first worker coming back: its outcome must be refused.
func (s *sequence) staleWorker() {
	tasks, err := s.st.ClaimTasks(s.ctx, master.Scope{}, "slow worker", 1, time.Hour)
	if err != nil {
		s.fatalf("ClaimTasks: %v", err)
	}
	if len(tasks) == 0 {
		return
	}
	s.exec(`UPDATE tasks SET lease_until = now() - interval '1 second' WHERE id = $1`, tasks[0].ID)
	if _, _, err := s.st.SweepExpired(s.ctx); err != nil {
		s.fatalf("SweepExpired: %v", err)
	}
	again, err := s.st.ClaimTasks(s.ctx, master.Scope{}, "fast worker", 10, time.Hour)
	if err != nil {
		s.fatalf("ClaimTasks: %v", err)
	}
	s.stalled = append(s.stalled, again...) // still at it
	s.complete(tasks[0])
}

// complete writes a worker's outcome for t under the attempt it claimed,
// and checks that it is accepted exactly when t still runs under that
// attempt.
func (s *sequence) complete(t master.Task) {
	var state string
	var attempt int
	if err := s.pool.QueryRow(s.ctx, `SELECT state, attempt FROM tasks WHERE id = $1`, t.ID).Scan(&state, &attempt); err != nil {
		s.fatalf("task %d: %v", t.ID, err)
	}
	current := state == string(master.TaskRunning) && attempt == t.Attempt
	err := s.finish(t, workerOutcome(s.rng, s.inquisitive, s.text))
	switch {
	case err == nil && !current:
		s.fatalf("a stale worker's outcome was accepted: task %d is %s under attempt %d, the worker claimed attempt %d", t.ID, state, attempt, t.Attempt)
	case errors.Is(err, master.ErrStale) && current:
		s.fatalf("task %d's worker was refused as stale while it still ran under its attempt %d", t.ID, t.Attempt)
	case err != nil && !errors.Is(err, master.ErrStale):
		s.fatalf("complete task: %v", err)
	}
}

// settle runs the team until nothing is left to do: the master decides,
// workers finish their tasks, the outbox is delivered, retries come due.
func (s *sequence) settle() {
	s.discord.calm()
	for i := range 400 {
		s.trace = append(s.trace, fmt.Sprintf("settle %d", i))
		s.timePasses()
		s.step()
		for {
			tasks, err := s.st.ClaimTasks(s.ctx, master.Scope{}, "worker", 10, time.Hour)
			if err != nil {
				s.fatalf("ClaimTasks: %v", err)
			}
			if len(tasks) == 0 {
				break
			}
			if s.rng.IntN(2) == 0 {
				// Together, as the pool writes outcomes that end at once.
				cs := make([]master.Completion, len(tasks))
				for i, t := range tasks {
					cs[i] = master.Completion{Task: master.TaskRef{ID: t.ID, Attempt: t.Attempt},
						Outcome: workerOutcome(s.rng, s.inquisitive, s.text), SessionID: t.SessionID}
				}
				for _, err := range s.st.CompleteTasks(s.ctx, cs) {
					if err != nil && !errors.Is(err, master.ErrStale) {
						s.fatalf("CompleteTasks: %v", err)
					}
				}
				continue
			}
			for _, t := range tasks {
				if err := s.finish(t, workerOutcome(s.rng, s.inquisitive, s.text)); err != nil && !errors.Is(err, master.ErrStale) {
					s.fatalf("complete task: %v", err)
				}
			}
		}
		s.expire() // a task or a download stalled by the sequence
		s.expireApprovals()
		s.fetch()
		s.flush()
		if _, err := s.disp2.Flush(s.ctx); err != nil {
			s.fatalf("second sender: %v", err)
		}
		s.check()
		var open int
		if err := s.pool.QueryRow(s.ctx, `SELECT
			(SELECT count(*) FROM turns u JOIN sessions x ON x.id = u.session_id WHERE u.state IN ('queued', 'running') AND x.state = 'active')
			+ (SELECT count(*) FROM tasks WHERE state IN ('queued', 'running', 'approval'))
			+ (SELECT count(*) FROM outbox WHERE state = 'pending')
			+ (SELECT count(*) FROM attachments a JOIN turns u ON u.id = a.turn_id
			   WHERE a.state = 'pending' AND u.state IN ('queued', 'running'))`).Scan(&open); err != nil {
			s.fatalf("count open work: %v", err)
		}
		if open == 0 {
			return
		}
	}
	s.fatalf("the sequence did not settle in 400 rounds")
}
