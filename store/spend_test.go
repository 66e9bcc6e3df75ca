package store_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/store/storetest"
)

// charge holds a call of u's size for session and settles it to u.
func (w *world) charge(session int64, u master.Usage) {
	w.t.Helper()
	held, err := w.store.HoldSpend(w.ctx, master.Hold{SessionID: session, Model: u.Model,
		PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Owner: "p"})
	if err != nil {
		w.t.Fatalf("HoldSpend: %v", err)
	}
	if err := w.store.SettleSpend(w.ctx, held.ID, u); err != nil {
		w.t.Fatalf("SettleSpend: %v", err)
	}
}

// spent reads what a session used and holds, and its guild's day.
func (w *world) spent(session int64) (used, held, guildUsed, guildHeld int64) {
	w.t.Helper()
	err := w.pool.QueryRow(w.ctx, `
		SELECT s.prompt_tokens + s.completion_tokens, s.held_tokens,
		       coalesce(g.used_tokens, 0), coalesce(g.held_tokens, 0)
		FROM sessions s LEFT JOIN guild_spend g ON g.guild_id = s.guild_id AND g.day = (now() AT TIME ZONE 'UTC')::date
		WHERE s.id = $1`, session).Scan(&used, &held, &guildUsed, &guildHeld)
	if err != nil {
		w.t.Fatal(err)
	}
	return used, held, guildUsed, guildHeld
}

// A hold counts against the budgets until it is settled, to what the call
// used: its session's totals, its usage by model, its task's tokens and
// its guild's day (in all and by model) get the usage, and the holds go.
func TestHoldThenSettle(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	_, ids := w.enqueue(s.ID, task("researcher", "a"))
	budget := master.Budget{SessionTokens: 1000}
	held, err := w.store.HoldSpend(w.ctx, master.Hold{SessionID: s.ID, TaskID: ids[0], Model: "m",
		PromptTokens: 800, CompletionTokens: 200, Owner: "p", Budget: budget})
	if err != nil || held.ID == 0 {
		t.Fatalf("HoldSpend = %+v, %v", held, err)
	}
	if used, h, gUsed, gHeld := w.spent(s.ID); used != 0 || h != 1000 || gUsed != 0 || gHeld != 1000 {
		t.Errorf("after the hold: used %d held %d, guild used %d held %d; want 0, 1000, 0, 1000", used, h, gUsed, gHeld)
	}
	// The hold reaches the budget: a second call is refused while it is in
	// flight, and told that only holds stand in its way.
	_, err = w.store.HoldSpend(w.ctx, master.Hold{SessionID: s.ID, Model: "m", PromptTokens: 100, Owner: "p", Budget: budget})
	var be *master.BudgetError
	if err == nil || !errors.As(err, &be) || !be.Busy() || be.Held != 1000 || be.Used != 0 {
		t.Errorf("a second hold: %v, want a busy team budget (1000 held)", err)
	}
	if err := w.store.SettleSpend(w.ctx, held.ID, master.Usage{PromptTokens: 300, CompletionTokens: 50, Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if used, h, gUsed, gHeld := w.spent(s.ID); used != 350 || h != 0 || gUsed != 350 || gHeld != 0 {
		t.Errorf("after settling: used %d held %d, guild used %d held %d; want 350, 0, 350, 0", used, h, gUsed, gHeld)
	}
	if tk := w.task(ids[0]); tk.Usage.Total() != 350 {
		t.Errorf("task tokens %+v, want the 350 of its call", tk.Usage)
	}
	gs, err := w.store.GuildSpend(w.ctx, "g1")
	if err != nil || fmt.Sprint(gs.Today) != "[{300 50 m}]" {
		t.Errorf("GuildSpend = %+v, %v", gs, err)
	}
	if err := w.store.SettleSpend(w.ctx, held.ID, master.Usage{PromptTokens: 1}); !errors.Is(err, master.ErrNotFound) {
		t.Errorf("settling twice = %v, want ErrNotFound", err)
	}
	if used, _, _, _ := w.spent(s.ID); used != 350 {
		t.Errorf("a second settlement charged: used %d", used)
	}
	if _, err := w.store.HoldSpend(w.ctx, master.Hold{SessionID: 999999, Owner: "p"}); !errors.Is(err, master.ErrNotFound) {
		t.Errorf("a hold for no session = %v, want ErrNotFound", err)
	}
}

// The master's hold counts the call on the turn in the same statement:
// refused past the ceiling (counted no further), stale when the guard
// fails, and not counted when the budget refuses it.
func TestHoldCountsMasterCalls(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	turn, _ := w.record(s, "m1")
	if _, err := w.store.OpenTurn(w.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	w.lease(s, "p")
	g := master.Guard{SessionID: s.ID, TurnID: turn.ID, Owner: "p"}
	hold := func(g master.Guard, budget int64) (master.Held, error) {
		h, err := w.store.HoldSpend(w.ctx, master.Hold{SessionID: s.ID, Turn: &g, MaxCalls: 2, Model: "m",
			PromptTokens: 10, Owner: "p", Budget: master.Budget{SessionTokens: budget}})
		if err == nil {
			if err := w.store.SettleSpend(w.ctx, h.ID, master.Usage{PromptTokens: 10}); err != nil {
				t.Fatal(err)
			}
		}
		return h, err
	}
	for i := 1; i <= 2; i++ {
		if h, err := hold(g, 0); err != nil || h.Calls != i {
			t.Fatalf("call %d: %+v, %v", i, h, err)
		}
	}
	if _, err := hold(g, 15); !errors.Is(err, master.ErrBudget) {
		t.Errorf("over budget and ceiling: %v, want the budget first", err)
	}
	if h, err := hold(g, 0); !errors.Is(err, master.ErrCeiling) || h.Calls != 2 {
		t.Errorf("third call: %+v, %v; want the ceiling at 2", h, err)
	}
	stale := g
	stale.Owner = "other"
	if _, err := hold(stale, 0); !errors.Is(err, master.ErrStale) {
		t.Errorf("another owner's guard: %v, want ErrStale", err)
	}
	if used, held, _, _ := w.spent(s.ID); used != 20 || held != 0 {
		t.Errorf("used %d held %d, want the two calls' 20 and nothing held", used, held)
	}
}

// Calls running at once cannot overshoot a budget together: teams of one
// guild, each with several workers calling in parallel, every call
// holding its worst case and using all of it, spend at most one hold past
// the team's budget and past the guild's. (Without holds, each worker saw
// only the others' settled spend, and N workers overshot by about N
// calls.)
func TestConcurrentCallsOvershootByOneHoldAtMost(t *testing.T) {
	t.Parallel()
	w := setup(t)
	overshootByOneHold(t, w, w.store)
}

// Two processes' workers holding and settling at once, in one guild, over
// the same teams: their groups of holds lock sessions and guild days in
// the same order as everything else does, so they do not deadlock (or,
// if Postgres says they did, are asked for one by one), and the bounds
// hold across both.
func TestTwoProcessesOvershootByOneHoldAtMost(t *testing.T) {
	t.Parallel()
	u := storetest.URL(t)
	a := storetest.Open(t, u)
	w := &world{t: t, ctx: t.Context(), store: a, pool: store.Pool(a)}
	overshootByOneHold(t, w, a, storetest.Open(t, u))
}

// overshootByOneHold runs workers of four teams of one guild through the
// stores given (each a process), every call holding then settling, until
// the budgets refuse them: each team's spend and the guild's exceed
// their budgets by one hold at most, and the guild is charged exactly
// what the calls used.
func overshootByOneHold(t *testing.T, w *world, stores ...*store.Store) {
	const (
		teams, workers = 4, 5
		teamBudget     = 1000
		guildBudget    = 2500
		worst          = 150 // prompt 100 + max output 50
	)
	var sessions []int64
	for range teams {
		sessions = append(sessions, w.startSession().ID)
	}
	budget := master.Budget{SessionTokens: teamBudget, GuildDailyTokens: guildBudget}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var spentByCalls int64
	for _, sid := range sessions {
		for i := range workers {
			st := stores[i%len(stores)]
			wg.Go(func() {
				for {
					held, err := st.HoldSpend(w.ctx, master.Hold{SessionID: sid, Model: "m", PromptTokens: 100,
						CompletionTokens: 50, Owner: "p", Budget: budget})
					var be *master.BudgetError
					switch {
					case errors.As(err, &be) && be.Busy():
						continue // calls in flight may settle for less: ask again
					case errors.As(err, &be):
						return
					case err != nil:
						t.Error(err)
						return
					}
					// The call uses its worst case, or less.
					u := master.Usage{PromptTokens: 100, CompletionTokens: int64(40 + rand.IntN(11)), Model: "m"}
					mu.Lock()
					spentByCalls += u.Total()
					mu.Unlock()
					if err := st.SettleSpend(w.ctx, held.ID, u); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	var guildUsed int64
	for _, sid := range sessions {
		used, held, gUsed, gHeld := w.spent(sid)
		if used > teamBudget+worst || held != 0 {
			t.Errorf("team %d used %d (held %d): more than its budget %d plus one hold of %d", sid, used, held, teamBudget, worst)
		}
		guildUsed = gUsed
		if gHeld != 0 {
			t.Errorf("the guild still holds %d", gHeld)
		}
	}
	if guildUsed > guildBudget+worst || guildUsed < guildBudget {
		t.Errorf("the guild used %d: want its budget %d reached and overshot by one hold of %d at most", guildUsed, guildBudget, worst)
	}
	if guildUsed != spentByCalls {
		t.Errorf("the guild was charged %d, the calls used %d", guildUsed, spentByCalls)
	}
}

// A hold whose process died, or that outlived its expiry, is settled by
// the sweeper at its worst case (the call may have been made and paid
// for): no hold is leaked, and a settlement that comes after charges
// nothing more.
func TestLostHoldsAreSettledAtWorstCase(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	w.exec(`INSERT INTO processes (owner, lost_at) VALUES ('p-dead', now() - interval '1 minute')`)
	dead, err := w.store.HoldSpend(w.ctx, master.Hold{SessionID: s.ID, Model: "m", PromptTokens: 70, CompletionTokens: 30, Owner: "p-dead"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.store.SweepExpired(w.ctx); err != nil {
		t.Fatal(err)
	}
	if used, held, gUsed, gHeld := w.spent(s.ID); used != 100 || held != 0 || gUsed != 100 || gHeld != 0 {
		t.Errorf("after the dead process's sweep: used %d held %d, guild %d/%d; want its worst case charged, nothing held", used, held, gUsed, gHeld)
	}
	if err := w.store.SettleSpend(w.ctx, dead.ID, master.Usage{PromptTokens: 5}); !errors.Is(err, master.ErrNotFound) {
		t.Errorf("a late settlement = %v, want ErrNotFound", err)
	}
	// A live process's hold that outlived its expiry goes at the sweep
	// after (expired holds are looked for every minute at most).
	_, err = w.store.HoldSpend(w.ctx, master.Hold{SessionID: s.ID, Model: "m", PromptTokens: 40, Owner: "p-live", TTL: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w.exec(`UPDATE spend_holds SET expires_at = now() - interval '1 second'`)
	store.ForgetHoldSweep(w.store)
	if _, _, err := w.store.SweepExpired(w.ctx); err != nil {
		t.Fatal(err)
	}
	if used, held, _, _ := w.spent(s.ID); used != 140 || held != 0 {
		t.Errorf("after the expiry: used %d held %d, want 140 and nothing held", used, held)
	}
	gs, err := w.store.GuildSpend(w.ctx, "g1")
	if err != nil || fmt.Sprint(gs.Today) != "[{110 30 m}]" {
		t.Errorf("GuildSpend = %+v, %v", gs, err)
	}
}

// Holds asked for together are decided one after another in one write:
// each sees the holds granted before it, so a group overshoots a budget
// by one hold at most, as holds made one by one do; a refusal says
// whether calls in flight stand in its way, and one hold's problem (a
// session that is gone) is its own. Settled together, each is charged
// what its own call used.
func TestHoldsTogetherAreDecidedInTurn(t *testing.T) {
	t.Parallel()
	w := setup(t)
	a, b := w.startSession(), w.startSession()
	budget := master.Budget{SessionTokens: 250, GuildDailyTokens: 1000}
	hold := func(session int64) master.Hold {
		return master.Hold{SessionID: session, Model: "m", PromptTokens: 70, CompletionTokens: 30, Owner: "p", Budget: budget}
	}
	// b first in the list, a's in between: the group sorts them by session.
	hs := []master.Hold{hold(b.ID), hold(a.ID), hold(a.ID), hold(b.ID), hold(a.ID), hold(a.ID), hold(1 << 40)}
	held, errs := store.HoldTogether(w.store, w.ctx, hs)
	var granted [2]int
	for i, err := range errs {
		var be *master.BudgetError
		switch {
		case i == len(hs)-1:
			if !errors.Is(err, master.ErrNotFound) {
				t.Errorf("the hold of a session that is gone: %v, want ErrNotFound", err)
			}
		case err == nil && held[i].ID > 0:
			granted[map[int64]int{a.ID: 0, b.ID: 1}[hs[i].SessionID]]++
		case errors.As(err, &be) && be.Busy() && hs[i].SessionID == a.ID:
		default:
			t.Errorf("hold %d (session %d): %+v, %v", i, hs[i].SessionID, held[i], err)
		}
	}
	// 250 tokens: holds of 100 are granted while used+held < 250: three.
	if granted != [2]int{3, 2} {
		t.Fatalf("granted %v holds of a and b, want 3 of a's 4 (its budget, overshot by one hold) and both of b's", granted)
	}
	if _, aHeld, _, gHeld := w.spent(a.ID); aHeld != 300 || gHeld != 500 {
		t.Errorf("a holds %d and the guild %d, want 300 and 500", aHeld, gHeld)
	}

	var ids []int64
	var us []master.Usage
	for i, h := range held {
		if h.ID > 0 {
			ids = append(ids, h.ID)
			us = append(us, master.Usage{PromptTokens: 10, CompletionTokens: int64(i), Model: "m2"})
		}
	}
	ids = append(ids, 1<<40)
	us = append(us, master.Usage{PromptTokens: 1})
	errs = store.SettleTogether(w.store, w.ctx, ids, us)
	for i, err := range errs {
		if missing := i == len(ids)-1; missing != errors.Is(err, master.ErrNotFound) || (!missing && err != nil) {
			t.Errorf("settlement %d: %v", i, err)
		}
	}
	aUsed, aHeld, gUsed, gHeld := w.spent(a.ID)
	bUsed, bHeld, _, _ := w.spent(b.ID)
	// a's holds were 1, 2, 4 in the list; b's 0 and 3.
	if aUsed != 30+1+2+4 || bUsed != 20+0+3 || aHeld+bHeld+gHeld != 0 || gUsed != aUsed+bUsed {
		t.Errorf("after settling: a used %d, b %d, guild %d; held %d/%d/%d: want each its own call's usage, nothing held",
			aUsed, bUsed, gUsed, aHeld, bHeld, gHeld)
	}
}
