package master

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/callonbot/callon/internal/proc"
)

// Every model call callon makes — the master's, a worker's, /replan's —
// goes through Meter.Chat: its worst case is held against the session's
// budget and its guild's budget of the day before it starts, in one
// statement, and settled to what it used when it returns, whatever then
// becomes of the turn or task that made it. So a task dropped by
// /dissolve, a lost lease or a shutdown has paid for its calls, and calls
// running at once cannot overshoot a budget together: a hold is granted
// only while the settled usage plus the holds of the calls in flight is
// under the budget, so the spend exceeds a budget by at most the one
// hold that crossed it (provided each call uses at most its worst case).

// Hold is the worst case of one model call, held against its session's
// token budget and its guild's budget of the UTC day while the call runs.
type Hold struct {
	SessionID int64
	// TaskID is a worker's task (its tokens are counted on it too); 0 for
	// the master's and /replan's calls.
	TaskID int64
	// Turn, when set, also counts the call among the turn's master calls
	// in the same statement: ErrStale when the guard fails, ErrCeiling
	// once the turn has made MaxCalls (the call is then neither counted
	// nor held).
	Turn     *Guard
	MaxCalls int
	Model    string
	// PromptTokens and CompletionTokens are the call's worst case
	// (WorstCase).
	PromptTokens, CompletionTokens int64
	// Owner is the process making the call: if it dies, its holds are
	// settled at their worst case by the sweeper.
	Owner string
	// Budget gives the budgets that admins did not set.
	Budget Budget
	// TTL bounds the hold of a process that is alive but never settles
	// it; HoldTTL when zero.
	TTL time.Duration
}

// Tokens is the hold's total.
func (h Hold) Tokens() int64 { return h.PromptTokens + h.CompletionTokens }

// HoldTTL is how long a hold may stay unsettled before the sweeper
// settles it at its worst case: far beyond any model call (the llm
// client bounds each attempt and its retries); a process that dies has
// its holds settled within seconds instead.
const HoldTTL = time.Hour

// Held is a hold granted.
type Held struct {
	ID int64
	// Calls is the turn's master calls, this one included (Hold.Turn set).
	Calls int
}

// SpendStore holds and settles the tokens of model calls (package store
// implements it).
type SpendStore interface {
	// HoldSpend holds h's worst case against its session's budget and its
	// guild's budget of the day in one statement: granted while the
	// session's usage plus its holds is under its budget, and the same for
	// the guild; otherwise a *BudgetError (Held tells how much of it the
	// calls in flight hold). ErrNotFound when the session does not exist.
	HoldSpend(ctx context.Context, h Hold) (Held, error)
	// SettleSpend replaces hold id with what its call used: charged to the
	// session, its usage by model, its task, and its guild's day, in one
	// statement. ErrNotFound when the hold is gone (the sweeper settled it
	// at its worst case).
	SettleSpend(ctx context.Context, id int64, u Usage) error
}

// Worst-case estimates of a call (WorstCase).
const (
	// DefaultMaxOutput is a call's max_tokens when neither its role nor
	// CALLON_MAX_OUTPUT_TOKENS sets one: the bound of its completion.
	DefaultMaxOutput = 4096
	// imageTokens bounds what one image costs a model that sees it.
	imageTokens = 2000
	// messageTokens bounds the framing of one message (role, separators).
	messageTokens = 8
)

// WorstCase bounds the tokens of a call: its prompt at one token per byte
// (a byte-level tokenizer's worst case) of every message, tool call and
// tool definition, plus the framing of each message and each image, and
// its completion at its MaxTokens.
func WorstCase(req ChatRequest) (prompt, completion int64) {
	n := 0
	for _, m := range req.Messages {
		n += messageTokens + len(m.Content) + len(m.Images)*imageTokens
		for _, c := range m.ToolCalls {
			n += len(c.ID) + len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += messageTokens + len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	return int64(n), int64(max(req.MaxTokens, 0))
}

// Meter makes model calls that are charged whatever becomes of whoever
// made them (see Hold).
type Meter struct {
	Store SpendStore
	LLM   LLM
	// MaxOutput is the max_tokens of calls that set none
	// (CALLON_MAX_OUTPUT_TOKENS): the bound of their completion, and so
	// of their hold; DefaultMaxOutput when zero.
	MaxOutput int
	// Wait bounds how long a call waits for the calls in flight of its
	// session or guild to settle when only their holds stand in the way
	// of its own (two minutes when zero); then it is refused as over
	// budget.
	Wait time.Duration
	Log  *slog.Logger
}

// Chat makes one call for h's session: it holds the call's worst case
// (h's Turn counted too), calls the model, and settles the hold to the
// usage the call returned, also when it failed. The hold's refusal is
// returned as it is (a *BudgetError, ErrCeiling, ErrStale…) and no model
// is called; a settlement that fails leaves the hold to the sweeper,
// which charges its worst case.
func (m Meter) Chat(ctx context.Context, h Hold, req ChatRequest) (ChatResponse, Held, error) {
	if req.MaxTokens <= 0 {
		req.MaxTokens = cmp.Or(m.MaxOutput, DefaultMaxOutput)
	}
	h.Model = req.Model
	h.PromptTokens, h.CompletionTokens = WorstCase(req)
	held, err := m.hold(ctx, h)
	if err != nil {
		return ChatResponse{}, held, err
	}
	resp, err := m.LLM.Chat(ctx, req)
	resp.Usage.Model = cmp.Or(resp.Usage.Model, req.Model)
	// Settled even when ctx has ended: the call has been made.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if serr := m.Store.SettleSpend(sctx, held.ID, resp.Usage); serr != nil && m.Log != nil {
		m.Log.Warn("model call not settled: its worst case will be charged", "session_id", h.SessionID,
			"hold_id", held.ID, "tokens", resp.Usage.Total(), "held", h.Tokens(), "err", serr)
	}
	return resp, held, err
}

// hold asks for h, waiting while only the holds of calls in flight stand
// in its way (they may settle for less than they hold), at most m.Wait.
func (m Meter) hold(ctx context.Context, h Hold) (Held, error) {
	deadline := time.Now().Add(cmp.Or(m.Wait, 2*time.Minute))
	for attempt := 1; ; attempt++ {
		held, err := m.Store.HoldSpend(ctx, h)
		var be *BudgetError
		if !errors.As(err, &be) || !be.Busy() || time.Now().After(deadline) {
			return held, err
		}
		t := time.NewTimer(proc.Backoff(attempt, 100*time.Millisecond, 2*time.Second))
		select {
		case <-ctx.Done():
			t.Stop()
			return held, fmt.Errorf("wait for the calls in flight to settle: %w", ctx.Err())
		case <-t.C:
		}
	}
}
