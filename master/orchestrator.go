package master

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/callonbot/callon/internal/proc"
)

// OrchestratorConfig tunes the orchestrator. Zero values take the documented defaults.
type OrchestratorConfig struct {
	Owner     string // this process, for master leases
	Scope     Scope  // the sessions this orchestrator runs
	Model     string // the master's model
	MaxRounds int    // delegation rounds per turn
	MaxTasks  int    // tasks per round
	MaxRoles  int    // roles per team
	History   int    // recent exchanges shown verbatim
	// Budget is the deployment's token budgets, which admins may change
	// per guild and per team: once one is spent, the master's model is
	// not called for the session.
	Budget Budget
	// MaxOutput is the max_tokens of the master's calls
	// (CALLON_MAX_OUTPUT_TOKENS): the bound of a call's completion, held
	// against the budgets while it runs; DefaultMaxOutput when zero.
	MaxOutput int
	Lease     time.Duration
	// Poll is the fallback when no wake-up comes (proc.IdlePoll with Wake,
	// else 2 s); a failed step's retry is waited for with a timer.
	Poll time.Duration
	// A decision that fails (its model cannot be reached, or a step
	// fails) is retried up to Retries times, with backoff (from
	// RetryDelay, doubling, for an unreachable model), before the turn
	// ends with an apology.
	Retries    int
	RetryDelay time.Duration
	// MaxCalls is the ceiling on the master's model calls for one turn,
	// whatever path the code takes; at it the turn ends with an apology.
	MaxCalls    int
	Concurrency int           // sessions stepped at once
	Wake        <-chan string // hints from the store's listener

	// Hand-back across channels.
	Dispatch      bool     // offer the dispatch tool
	DispatchDepth int      // a session this many dispatches deep cannot dispatch
	ReportCap     int      // reports between two sessions per hour
	Channels      Channels // the platform's channels, for dispatch
	Service       *Service // starts dispatched sessions, within its caps and allow lists
	// Archive archives the thread of a dispatched team the caps refused
	// at the last moment; nil leaves it.
	Archive func(ctx context.Context, threadID string) error

	// Guilds tells what the author of a turn may do on the platform: dispatch
	// needs them to see and post in the target channel, and replan to be
	// allowed /replan for anything beyond the catalog. Without it, both
	// are refused.
	Guilds Guilds

	// Catalog, when set, gives a channel's configured roles: a role that
	// replan adds under one of those names takes its prompt and model.
	Catalog CatalogFunc

	Metrics Metrics // nil: NoMetrics

	// Vision says the master's model is given the images attached to a
	// message; without it, it is told their names.
	Vision bool

	// Instructions, when set, replace MasterInstructions in the master's
	// system prompt (CALLON_MASTER_PROMPT_FILE; callon eval and replay's
	// --prompt-file).
	Instructions string

	// Memory writes the channels' notes for the remember and forget
	// tools; nil: no team has memory (whatever its features say).
	Memory MemoryStore
	// Reviews keeps the reviewer's drafts and verdicts; nil: no team's
	// replies are reviewed (whatever its features say).
	Reviews ReviewStore
}

func (c OrchestratorConfig) withDefaults() OrchestratorConfig {
	c.MaxRounds = cmp.Or(c.MaxRounds, 3)
	c.MaxTasks = cmp.Or(c.MaxTasks, 6)
	c.MaxRoles = cmp.Or(c.MaxRoles, 8)
	c.History = cmp.Or(c.History, 12)
	c.Lease = cmp.Or(c.Lease, 30*time.Second)
	c.Poll = proc.PollFor(c.Poll, c.Wake, 2*time.Second)
	c.Concurrency = cmp.Or(c.Concurrency, 8)
	c.RetryDelay = cmp.Or(c.RetryDelay, 30*time.Second)
	c.MaxCalls = cmp.Or(c.MaxCalls, DefaultMaxCalls)
	c.DispatchDepth = cmp.Or(c.DispatchDepth, 1)
	c.ReportCap = cmp.Or(c.ReportCap, 10)
	c.Dispatch = c.Dispatch && c.Channels != nil && c.Service != nil && c.Guilds != nil
	if c.Metrics == nil {
		c.Metrics = NoMetrics{}
	}
	return c
}

// OrchestratorStore is what the orchestrator needs from Postgres. Every
// method that changes state is one transaction; the guarded ones return
// ErrStale when their guard no longer holds.
type OrchestratorStore interface {
	// PendingSessions lists active sessions of scope whose oldest open
	// turn needs the master now (not started, or every task of its round
	// has ended) and whose master lease is free or held by owner.
	PendingSessions(ctx context.Context, scope Scope, owner string) ([]int64, error)
	// AcquireMaster leases the session's master to owner; false when
	// another owner holds a live lease. Calling it again extends the lease.
	AcquireMaster(ctx context.Context, sessionID int64, owner string, lease time.Duration) (bool, error)
	ReleaseMaster(ctx context.Context, sessionID int64, owner string) error
	// OpenTurn returns the session's oldest queued or running turn,
	// starting it (queued → running) if needed; ErrNotFound when none.
	OpenTurn(ctx context.Context, sessionID int64) (Turn, error)
	// StartTurn is AcquireMaster then OpenTurn in one round trip;
	// ErrNotFound when the lease is another's or there is no turn (the
	// lease may be taken all the same).
	StartTurn(ctx context.Context, sessionID int64, owner string, lease time.Duration) (Turn, error)
	// TurnReads reads what a decision on the session's turn needs (see
	// TurnReads), in one round trip; ErrNotFound when the session does
	// not exist.
	TurnReads(ctx context.Context, sessionID, turnID int64, historyLimit int) (TurnReads, error)
	// FinishTurn ends the guarded turn: it writes the outbox parts and
	// moves the turn to state (done, or waiting for a question). It
	// reports whether another turn of the session is queued.
	FinishTurn(ctx context.Context, g Guard, f Finish) (next bool, err error)
	// FailTurn counts a failed decision on the guarded turn (any round)
	// and puts its next one off by retryIn; it returns the count.
	FailTurn(ctx context.Context, g Guard, retryIn time.Duration) (int, error)
	// SpendStore holds each master call's worst case before it is made,
	// counting it on the guarded turn (Hold.Turn), and settles it after.
	SpendStore
	// AbandonTurn ends the guarded turn (any round) with text as its
	// reply unless it has one: the last resort.
	AbandonTurn(ctx context.Context, g Guard, text string) error
	// Delegate enqueues a round of tasks and advances the turn's round.
	Delegate(ctx context.Context, g Guard, tasks []NewTask) ([]int64, error)
	// ResumeTask answers a need_info task of the guarded turn's round; it
	// is queued again with the answer.
	ResumeTask(ctx context.Context, g Guard, taskID int64, answer string) error
	// Replan replaces the session's roster: roles keep their prompt and
	// model when their name stays; queued tasks of removed roles are
	// cancelled. It returns the names removed.
	Replan(ctx context.Context, g Guard, roster []Role) (removed []string, err error)
	// ReportBack delivers a report of the guarded turn's session to its
	// report_to, exactly once (see NewReport).
	ReportBack(ctx context.Context, g Guard, r NewReport) (Report, error)
	// DispatchedByTurn returns the session a turn dispatched to a
	// channel, or ErrNotFound.
	DispatchedByTurn(ctx context.Context, turnID int64, channelID string) (Session, error)
}

// DefaultMaxCalls is the default ceiling on the master's model calls for
// one turn.
const DefaultMaxCalls = 30

// Orchestrator runs the master of every active session: one turn at a
// time per session, woken by the store, with fan-in decided in code.
type Orchestrator struct {
	cfg   OrchestratorConfig
	store OrchestratorStore
	meter Meter // the master's model, every call charged
	log   *slog.Logger

	mu      sync.Mutex
	running map[int64]bool       // sessions stepped by this process now
	missed  map[int64]bool       // sessions found pending while stepped here: look again after
	settled map[int64]bool       // sessions whose turn just finished with none queued after it
	backoff map[int64]retryState // sessions whose last step failed
	done    chan struct{}        // a step ended with more to do: look again
	texted  map[string]bool      // models that answered in text: told once
}

// retryState is a session's failed steps in a row, and when it may be
// stepped again: a failure that cannot even be recorded still never makes
// the orchestrator spin.
type retryState struct {
	failures int
	until    time.Time
}

// NewOrchestrator returns an orchestrator; Run starts it.
func NewOrchestrator(cfg OrchestratorConfig, store OrchestratorStore, llm LLM, logger *slog.Logger) *Orchestrator {
	log := logger.With("component", "master")
	cfg = cfg.withDefaults()
	return &Orchestrator{
		cfg:     cfg,
		store:   store,
		meter:   Meter{Store: store, LLM: llm, MaxOutput: cfg.MaxOutput, Log: log},
		log:     log,
		running: make(map[int64]bool),
		missed:  make(map[int64]bool),
		settled: make(map[int64]bool),
		backoff: make(map[int64]retryState),
		done:    make(chan struct{}, 1),
		texted:  make(map[string]bool),
	}
}

// Run steps sessions that need their master until ctx ends, then waits
// for the steps in flight (which see ctx cancelled) to return.
func (o *Orchestrator) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, o.cfg.Concurrency)
	for {
		ids, err := o.pending(ctx)
		if err != nil && ctx.Err() == nil {
			o.log.Warn("list pending sessions", "err", err)
		}
		for _, id := range ids {
			if !o.claimLocal(id) {
				continue
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				o.releaseLocal(id)
				return nil
			}
			wg.Go(func() {
				defer func() { <-sem; o.releaseLocal(id) }()
				o.step(ctx, id)
			})
		}
		if err := o.wait(ctx); err != nil {
			return nil
		}
	}
}

func (o *Orchestrator) pending(ctx context.Context) ([]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return o.store.PendingSessions(ctx, o.cfg.Scope, o.cfg.Owner)
}

// wait returns on a wake-up, a step that ended with more to do, the end
// of a failed session's rest, or the jittered poll.
func (o *Orchestrator) wait(ctx context.Context) error {
	poll := time.NewTimer(o.nextLook())
	defer poll.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-o.cfg.Wake:
	case <-o.done:
	case <-poll.C:
	}
	return nil
}

// nextLook is how long to wait before looking for pending sessions
// without a wake: the jittered poll, or less when a failed session's
// rest ends sooner.
func (o *Orchestrator) nextLook() time.Duration {
	wait := proc.Jitter(o.cfg.Poll)
	now := time.Now()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.backoff {
		if r.until.After(now) {
			wait = min(wait, r.until.Sub(now)+time.Millisecond)
		}
	}
	return wait
}

// claimLocal marks a session as stepped by this process, unless it is
// already (then it is looked at again once that step ends) or its last
// step failed a moment ago.
func (o *Orchestrator) claimLocal(id int64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.running[id] {
		o.missed[id] = true
		return false
	}
	if time.Now().Before(o.backoff[id].until) {
		return false
	}
	o.running[id] = true
	return true
}

// backOff records a failed step of a session, which then rests a while,
// and has Run set its timer for the end of the rest.
func (o *Orchestrator) backOff(id int64, wait time.Duration) {
	o.mu.Lock()
	r := o.backoff[id]
	r.failures++
	r.until = time.Now().Add(max(wait, proc.Backoff(r.failures, time.Second, time.Minute)))
	o.backoff[id] = r
	o.mu.Unlock()
	select {
	case o.done <- struct{}{}:
	default:
	}
}

// recovered forgets a session's failed steps.
func (o *Orchestrator) recovered(id int64) {
	o.mu.Lock()
	delete(o.backoff, id)
	o.mu.Unlock()
}

// releaseLocal ends this process's step of a session; if the session
// was found pending meanwhile, or the step stopped at its bound, the
// pending sessions are looked at again at once.
func (o *Orchestrator) releaseLocal(id int64) {
	o.mu.Lock()
	again := o.missed[id]
	delete(o.running, id)
	delete(o.missed, id)
	o.mu.Unlock()
	if !again {
		return
	}
	select {
	case o.done <- struct{}{}:
	default:
	}
}

// Step runs one session's master as Run does when it is woken for it:
// under the master lease, it makes the decisions the session needs now,
// then gives the lease back. It reports false when the session was not
// stepped: stepped here already, resting after a failed step, or leased
// to another owner. Run calls it; tests drive it directly.
func (o *Orchestrator) Step(ctx context.Context, sessionID int64) bool {
	if !o.claimLocal(sessionID) {
		return false
	}
	defer o.releaseLocal(sessionID)
	return o.step(ctx, sessionID)
}

// step runs the session's master while it has something to decide; false
// when the lease was not to be had.
func (o *Orchestrator) step(ctx context.Context, sessionID int64) bool {
	log := o.log.With("session_id", sessionID)
	release := func() {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer rcancel()
		if err := o.store.ReleaseMaster(rctx, sessionID, o.cfg.Owner); err != nil {
			log.Warn("release master lease", "err", err)
		}
	}
	o.mu.Lock()
	delete(o.settled, sessionID) // of an earlier step's last turn
	o.mu.Unlock()
	// The lease and the turn in one round trip.
	first, err := o.store.StartTurn(ctx, sessionID, o.cfg.Owner, o.cfg.Lease)
	switch {
	case errors.Is(err, ErrNotFound):
		release() // no turn to open, or the lease is another's (then this changes nothing)
		return false
	case err != nil:
		if ctx.Err() == nil {
			log.Warn("start a master step", "err", err)
		}
		o.backOff(sessionID, 0)
		return false
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go o.keepLease(ctx, cancel, sessionID)
	defer release()
	// A turn that ends lets the next queued one start; bound the loop
	// so one busy session cannot starve the others.
	opened := &first
	for range 8 {
		turn, progressed, err := o.advance(ctx, sessionID, opened)
		opened = nil
		if err != nil {
			o.failed(ctx, sessionID, turn, err)
			return true
		}
		o.recovered(sessionID)
		if !progressed {
			return true
		}
	}
	o.mu.Lock()
	o.missed[sessionID] = true // there may be more: look again once released
	o.mu.Unlock()
	return true
}

// Apologies for a turn the master could not finish.
const (
	apologyUnreachable = "Sorry, I could not reach the team's language model, so I have no answer. Please send your message again a little later."
	apologyFailing     = "Sorry, something went wrong on my side while handling this message, and trying again did not help. Please send it again; if it keeps happening, tell whoever runs this bot."
	apologyCeiling     = "Sorry, this message took more steps than I allow for one message, so I stopped here. Please ask again, perhaps in smaller parts."
)

// unreachable is a master model call that failed after the llm package's
// own retries: a later try may work.
type unreachable struct{ err error }

func (e *unreachable) Error() string { return "master model call: " + e.err.Error() }
func (e *unreachable) Unwrap() error { return e.err }

// failed handles a step that failed. Every failure makes the session rest
// a while in this process, so nothing spins even when the failure cannot
// be recorded. A failure on a turn is counted there and the turn's next
// decision put off with backoff (longer when the model is unreachable);
// past the bound, the turn ends with an apology. A stale guard is not the
// turn's failure: another owner or a command moved it.
func (o *Orchestrator) failed(ctx context.Context, sessionID int64, turn *Turn, err error) {
	if ctx.Err() != nil {
		return
	}
	log := o.log.With("session_id", sessionID)
	var un *unreachable
	outage := errors.As(err, &un)
	base, top, apology := 2*time.Second, time.Minute, apologyFailing
	if outage {
		base, top, apology = o.cfg.RetryDelay, 10*time.Minute, apologyUnreachable
	}
	if turn == nil || errors.Is(err, ErrStale) {
		if !errors.Is(err, ErrStale) {
			log.Error("master step failed", "err", err)
		}
		o.backOff(sessionID, 0)
		return
	}
	g := Guard{SessionID: sessionID, TurnID: turn.ID, Round: turn.Round, Owner: o.cfg.Owner}
	log = log.With("turn_id", g.TurnID)
	n := turn.MasterFailures + 1
	if n <= o.cfg.Retries {
		wait := proc.Backoff(n, base, top)
		if _, ferr := o.store.FailTurn(ctx, g, wait); ferr != nil {
			log.Error("master step failed, and so did recording it", "err", err, "record_err", ferr)
			o.backOff(sessionID, wait)
			return
		}
		if outage {
			log.Warn("master model call failed; retrying the decision later", "failures", n, "retry_in", wait, "err", err)
		} else {
			log.Error("master step failed; retrying it later", "failures", n, "retry_in", wait, "err", err)
		}
		o.backOff(sessionID, wait)
		return
	}
	log.Error("master step failed again; giving up on the turn", "failures", n, "err", err)
	o.giveUp(ctx, g, *turn, apology)
}

// giveUp ends a turn with an apology: finished as a reply if its guard
// still holds, else abandoned (any round) as the last resort.
func (o *Orchestrator) giveUp(ctx context.Context, g Guard, turn Turn, apology string) {
	err := o.end(ctx, g, turn, OutcomeApology, apology, Usage{})
	if err == nil {
		return
	}
	err = o.store.AbandonTurn(ctx, g, apology)
	switch {
	case err == nil:
		o.cfg.Metrics.TurnEnded(OutcomeApology, time.Since(turn.CreatedAt))
	case !errors.Is(err, ErrStale):
		o.log.Error("could not end the turn", "session_id", g.SessionID, "turn_id", g.TurnID, "err", err)
		o.backOff(g.SessionID, 0)
	}
}

// keepLease extends the master lease while a step runs and cancels the
// step if the lease is lost.
func (o *Orchestrator) keepLease(ctx context.Context, cancel context.CancelFunc, sessionID int64) {
	t := time.NewTicker(o.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			ok, err := o.store.AcquireMaster(ctx, sessionID, o.cfg.Owner, o.cfg.Lease)
			if ctx.Err() != nil {
				return
			}
			if err == nil && !ok {
				o.log.Warn("master lease lost", "session_id", sessionID)
				cancel()
				return
			}
		}
	}
}

// advance makes one decision for the session's open turn (opened, when
// the step has opened it already), if it needs one. It returns the turn
// it looked at (nil if none) and whether it may go on: false when nothing
// changed, or the turn ended with none queued after it.
func (o *Orchestrator) advance(ctx context.Context, sessionID int64, opened *Turn) (*Turn, bool, error) {
	var turn Turn
	if opened != nil {
		turn = *opened
	} else {
		var err error
		turn, err = o.store.OpenTurn(ctx, sessionID)
		if errors.Is(err, ErrNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("open turn: %w", err)
		}
	}
	if time.Now().Before(turn.NotBefore) {
		return &turn, false, nil // a failed decision waits for its retry
	}
	// One round trip for every read, though a round still running or a
	// file still pending makes the rest unneeded: PendingSessions lists a
	// session only once its round has ended and its files are in.
	reads, err := o.store.TurnReads(ctx, sessionID, turn.ID, o.cfg.History/2+maxSummaryLines)
	if err != nil {
		return &turn, false, err
	}
	tasks, atts := reads.Tasks, reads.Attachments
	for _, t := range tasks {
		if t.Round == turn.Round && !t.State.Terminal() {
			return &turn, false, nil // fan-in: the round is still running
		}
	}
	for _, a := range atts {
		if a.State == AttachmentPending {
			return &turn, false, nil // the fetcher wakes the session when it has the file
		}
	}
	session, roster, history := reads.Session, reads.Roster, reads.History
	tc := turnContext{
		session:   session,
		roster:    roster,
		history:   history,
		recent:    max(o.cfg.History/2, 1),
		turn:      turn,
		tasks:     tasks,
		maxRounds: o.cfg.MaxRounds,

		attachments:  atts,
		vision:       o.cfg.Vision,
		instructions: o.cfg.Instructions,
		tracks:       reads.Tracks,
	}
	tc.withMemory(o.cfg.Memory != nil, reads.Notes)
	if turn.Round >= o.cfg.MaxRounds {
		tc.mustReply = fmt.Sprintf("You have used all %d rounds of delegation for this message.", o.cfg.MaxRounds)
		o.cfg.Metrics.LimitHit(LimitRounds)
	}
	g := Guard{SessionID: sessionID, TurnID: turn.ID, Round: turn.Round, Owner: o.cfg.Owner}
	var round bool
	if err := o.decide(ctx, g, tc, &round); err != nil || round {
		// A round just opened (tasks delegated, or a worker answered) has
		// nothing to decide until its tasks end: the step stops here, and
		// the tasks' outcomes wake the session again.
		return &turn, !round, err
	}
	// A turn that ended with no other queued: nothing to open.
	o.mu.Lock()
	last := o.settled[sessionID]
	delete(o.settled, sessionID)
	o.mu.Unlock()
	return &turn, !last, nil
}

// chat is the only way the orchestrator calls its model. Each call goes
// through the meter: one statement holds its worst case against the
// session's budgets (a *BudgetError once one is spent) and counts it on
// the turn (ErrCeiling once the turn has made MaxCalls), and the call is
// charged when it returns. So no path, present or future, can call the
// model for a session past its budget, or for one turn without bound. A
// failed call comes back *unreachable.
func (o *Orchestrator) chat(ctx context.Context, g Guard, req ChatRequest) (ChatResponse, error) {
	h := Hold{SessionID: g.SessionID, Turn: &g, MaxCalls: o.cfg.MaxCalls, Owner: o.cfg.Owner, Budget: o.cfg.Budget}
	resp, held, err := o.meter.Chat(ctx, h, req)
	var be *BudgetError
	switch {
	case errors.As(err, &be):
		o.cfg.Metrics.LimitHit(cmp.Or(map[bool]string{true: LimitGuildTokens}[be.Guild], LimitSessionTokens))
		return resp, err
	case held.ID == 0:
		return resp, err // not held: no call was made
	}
	if held.Calls == 1 {
		o.cfg.Metrics.TurnStarted()
	}
	if err != nil {
		return resp, &unreachable{err}
	}
	return resp, nil
}

// decide asks the model for a decision and applies it. A malformed call
// gets one retry with the validation error; replan continues the turn.
// Every call is charged as it returns (chat), whatever the decision comes
// to; usage only sums them for the log. It sets *opened when the decision
// opened a round of tasks (delegate, answer_worker).
func (o *Orchestrator) decide(ctx context.Context, g Guard, tc turnContext, opened *bool) error {
	log := o.log.With("session_id", g.SessionID, "turn_id", g.TurnID, "round", g.Round)
	if r, err := o.pendingReview(ctx, g, tc); err != nil || r != nil {
		if err != nil {
			return err
		}
		return o.carryOnReview(ctx, g, tc, *r, Usage{}) // the draft is decided: carry on with it
	}
	msgs := masterMessages(tc)
	var usage Usage
	retried, actions := false, 0
	env := decisionEnv{maxTasks: o.cfg.MaxTasks, maxRoles: o.cfg.MaxRoles, mustReply: tc.mustReply != "", round: tc.roundTasks(),
		reportTo: tc.session.ReportTo, callback: tc.session.CallbackURL != "", dispatch: o.cfg.Dispatch && tc.session.DispatchDepth < o.cfg.DispatchDepth,
		attachments: tc.attachments, memory: tc.memory, personas: tc.session.Features.Personas}
	// What the turn posts names the files nobody read, whatever the model
	// wrote.
	told := func(text string) string { return text + unreadNotice(text, tc.attachments, tc.vision, tc.tasks) }
	memoryActions := 0
	for {
		env.roster, env.notes = tc.roster, tc.shownNotes
		tools := masterTools(env)
		resp, err := o.chat(ctx, g, ChatRequest{Model: o.cfg.Model, Messages: msgs, Tools: tools, ToolChoice: "required"})
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, ErrBudget):
			// The bot answers itself: no model is called past a budget.
			log.Info("budget spent; answering without the model", "err", err)
			return o.finish(ctx, g, OutReply, TurnDone, BudgetText(err), usage)
		case errors.Is(err, ErrCeiling):
			log.Error("master call ceiling reached; ending the turn", "max_calls", o.cfg.MaxCalls)
			o.cfg.Metrics.LimitHit(LimitMasterCalls)
			return o.end(ctx, g, tc.turn, OutcomeApology, apologyCeiling, usage)
		case ErrorCode(err) == EModel:
			// Retrying cannot help: say at once what an operator must fix.
			log.Error("the LLM server refuses the master's calls", "err", err)
			return o.end(ctx, g, tc.turn, OutcomeRefused, "Sorry, I can't answer: "+sentence(ErrorMessage(err))+" Whoever runs this bot can fix that.", usage)
		default:
			return err
		}
		usage = usage.Add(resp.Usage)
		if len(resp.ToolCalls) == 0 {
			if text := strings.TrimSpace(resp.Content); text != "" {
				o.answeredInText(resp.Usage.Model)
				return o.answer(ctx, g, tc, told(text), nil, usage) // a text-only answer is a reply
			}
			resp.ToolCalls = []ToolCall{{ID: "missing", Name: "", Arguments: ""}}
		}
		msgs = append(msgs, Message{Role: RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
		var problems []string
		var acted bool // a tool that lets the turn go on was applied
		for _, call := range resp.ToolCalls {
			env.roster = tc.roster
			d, err := parseDecision(call, env)
			if err != nil {
				o.cfg.Metrics.ToolCalled("master", masterToolName(call.Name), "invalid")
				problems = append(problems, err.Error())
				msgs = append(msgs, Message{Role: RoleTool, ToolCallID: call.ID, Content: "Error: " + err.Error()})
				continue
			}
			o.cfg.Metrics.ToolCalled("master", d.tool, "ok")
			switch d.tool {
			case ToolReply:
				return o.answer(ctx, g, tc, told(d.text), d.exchange, usage)
			case ToolAskUser:
				return o.end(ctx, g, tc.turn, OutcomeQuestion, told(d.text), usage)
			case ToolDelegate:
				tc.giveNotes(d.tasks)
				ids, err := o.store.Delegate(ctx, g, d.tasks)
				if err != nil {
					return fmt.Errorf("delegate: %w", err)
				}
				log.Info("delegated", "tasks", len(ids), "to_round", g.Round+1)
				*opened = true
				return nil
			case ToolAnswerWorker:
				if err := o.store.ResumeTask(ctx, g, d.task, d.text); err != nil {
					return fmt.Errorf("answer worker: %w", err)
				}
				log.Info("answered a worker", "task_id", d.task)
				*opened = true
				return nil
			case ToolRemember, ToolForget:
				memoryActions++
				result := fmt.Sprintf("Not done: at most %d changes to the memory per decision. Go on with the turn.", maxMemoryActions)
				if memoryActions <= maxMemoryActions {
					if result, err = o.memoryAction(ctx, g, &tc, d); err != nil {
						return err
					}
				}
				msgs = append(msgs, Message{Role: RoleTool, ToolCallID: call.ID, Content: result})
				acted = true
			case ToolReportBack:
				msgs = append(msgs, Message{Role: RoleTool, ToolCallID: call.ID, Content: o.reportBack(ctx, g, tc.session, d.text)})
				acted = true
			case ToolDispatch:
				msgs = append(msgs, Message{Role: RoleTool, ToolCallID: call.ID, Content: o.dispatch(ctx, tc.session, tc.turn, d.channel, d.goal)})
				acted = true
			case ToolReplan:
				roster, refusal, err := o.replan(ctx, g, tc, d)
				if err != nil {
					return err
				}
				acted = true
				if refusal != "" {
					msgs = append(msgs, Message{Role: RoleTool, ToolCallID: call.ID, Content: refusal})
					continue
				}
				tc.roster = roster
				msgs = append(msgs, Message{Role: RoleTool, ToolCallID: call.ID, Content: "The team is now: " + strings.Join(RoleNames(roster), ", ") + ". Continue."})
			}
		}
		switch {
		case acted && actions < 4:
			actions++
		case len(problems) > 0 && !retried:
			retried = true
			log.Warn("malformed master decision; retrying once", "problems", problems)
		default:
			log.Error("master gave no usable decision", "problems", problems)
			return o.end(ctx, g, tc.turn, OutcomeApology, "Sorry, I got confused working out how to handle that. Could you rephrase or try again?", usage)
		}
	}
}

// replan applies a replan decision within a turn and returns the roster.
// A role it adds takes its definition from the channel's catalog when the
// catalog has its name. Unless the turn's author may /replan the team, it
// may only pick: every role must be on the team or in the catalog, and
// keeps its definition there (the model's descriptions are ignored), so a
// message cannot invent a role with a prompt of its own; otherwise it
// returns the refusal to tell the model.
func (o *Orchestrator) replan(ctx context.Context, g Guard, tc turnContext, d decision) (roster []Role, refusal string, err error) {
	s := tc.session
	catalog, err := catalogOf(ctx, o.cfg.Catalog, s)
	if err != nil {
		return nil, "", err
	}
	sketch := d.roles
	if !o.mayReplan(ctx, s, tc.turn) {
		var unknown []string
		sketch = make([]Role, len(d.roles))
		for i, r := range d.roles {
			def, ok := findRole(tc.roster, r.Name)
			if !ok {
				def, ok = findRole(catalog, r.Name)
			}
			if !ok {
				unknown = append(unknown, r.Name)
			}
			sketch[i] = Role{Name: r.Name, Description: def.Description}
		}
		if len(unknown) > 0 {
			o.log.Info("replan refused: roles beyond the catalog", "session_id", g.SessionID, "turn_id", g.TurnID, "roles", unknown)
			return nil, fmt.Sprintf("Refused: %s %s not among this channel's roles. The person who sent this message may not "+
				"reorganize the team beyond them (the team's owner and members who can manage threads may, with /replan), "+
				"so pick only from: %s. Or carry on with the team as it is.",
				strings.Join(unknown, ", "), plural(len(unknown), "is", "are"), strings.Join(RoleNames(catalog), ", ")), nil
		}
	}
	roster = MergeRoster(tc.roster, sketch, catalog)
	removed, err := o.store.Replan(ctx, g, roster)
	if err != nil {
		return nil, "", fmt.Errorf("replan: %w", err)
	}
	o.log.Info("replanned", "session_id", g.SessionID, "turn_id", g.TurnID, "roles", RoleNames(roster), "removed", removed, "reason", d.reason)
	return roster, "", nil
}

// mayReplan reports whether a turn's author may reorganize the team as
// /replan may: its owner, or a member who may manage threads in its
// channel. A turn with no author (a report's, a brief's) may not, nor a
// bot's (even the bot that started the team), nor one whose author cannot
// be looked up.
func (o *Orchestrator) mayReplan(ctx context.Context, s Session, turn Turn) bool {
	switch {
	case turn.AuthorID == "" || turn.AuthorBot:
		return false
	case turn.AuthorID == s.OwnerID:
		return true
	case o.cfg.Guilds == nil:
		return false
	}
	m, err := o.cfg.Guilds.GuildMember(ctx, s.GuildID, s.ChannelID, turn.AuthorID)
	if err != nil {
		if !errors.Is(err, ErrNotFound) {
			o.log.Warn("look up the sender's permissions for replan", "session_id", s.ID, "err", err)
		}
		return false
	}
	return Actor{UserID: turn.AuthorID, Permissions: m.Permissions}.MayManage(s)
}

// end finishes the turn with outcome (a question, or a reply of any
// kind) and counts it.
func (o *Orchestrator) end(ctx context.Context, g Guard, turn Turn, outcome TurnOutcome, text string, usage Usage) error {
	kind, state := OutReply, TurnDone
	if outcome == OutcomeQuestion {
		kind, state = OutQuestion, TurnWaiting
	}
	if err := o.finish(ctx, g, kind, state, text, usage); err != nil {
		return err
	}
	o.cfg.Metrics.TurnEnded(outcome, time.Since(turn.CreatedAt))
	return nil
}

// answeredInText tells the operator, once per model and process, that the
// master's model answered without calling a tool although it had to: a
// model that cannot call tools makes a team that answers everything
// itself and never delegates, which nobody would notice otherwise.
func (o *Orchestrator) answeredInText(model string) {
	o.mu.Lock()
	first := !o.texted[model]
	o.texted[model] = true
	o.mu.Unlock()
	if first {
		o.log.Warn("the master's model answered in text instead of calling a tool: it may not support tool calls, or it writes "+
			"them in a form callon does not decode (set the provider's tool_dialect to auto); until it calls tools, its teams "+
			"answer everything themselves and never delegate. Measure it with callon eval, or choose another model",
			"model", model)
	}
}

// masterToolName is name if it is a master tool, else "unknown": a label
// must not take whatever a model makes up.
func masterToolName(name string) string {
	for _, t := range masterToolset {
		if t.name == name {
			return name
		}
	}
	return "unknown"
}

// finish posts the turn's one reply (or question) through the outbox.
func (o *Orchestrator) finish(ctx context.Context, g Guard, kind OutKind, state TurnState, text string, usage Usage) error {
	parts := Split(text, MaxMessageLen)
	if len(parts) > maxReplyParts {
		parts = append(parts[:maxReplyParts-1], Truncate(parts[maxReplyParts-1], MaxMessageLen-40)+"\n*(reply shortened)*")
	}
	if len(parts) == 0 {
		parts = []string{"(no answer)"}
	}
	return o.post(ctx, g, Finish{Kind: kind, State: state, Parts: parts}, usage)
}

// post ends the turn with f (FinishTurn, one statement) and, when no
// other turn of the session is queued, notes that the step has nothing
// more to open. attrs are logged with it.
func (o *Orchestrator) post(ctx context.Context, g Guard, f Finish, usage Usage, attrs ...any) error {
	next, err := o.store.FinishTurn(ctx, g, f)
	if err != nil {
		return fmt.Errorf("finish turn: %w", err)
	}
	if !next {
		o.mu.Lock()
		o.settled[g.SessionID] = true
		o.mu.Unlock()
	}
	o.log.Info("turn answered", append([]any{"session_id", g.SessionID, "turn_id", g.TurnID, "kind", f.Kind, "parts", len(f.Parts),
		"tokens", usage.Total()}, attrs...)...)
	return nil
}

// maxReplyParts bounds how many messages one reply may become.
const maxReplyParts = 10
