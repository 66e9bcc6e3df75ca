package store_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/callonbot/callon/master"
)

// Sessions started at once cannot exceed the caps together: they are
// counted under a lock per guild.
func TestStartSessionCapsHoldUnderConcurrency(t *testing.T) {
	t.Parallel()
	w := setup(t)
	start := func(guild, owner string, caps master.SessionCaps) error {
		n := fixtureSeq.Add(1)
		_, err := w.store.StartSession(w.ctx, master.Session{GuildID: guild, ChannelID: "c1", ThreadID: fmt.Sprint("cap-", n),
			OwnerID: owner, Goal: "g"}, master.DefaultRoles(), "", "", caps)
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = start("g-cap", fmt.Sprint("owner-", i), master.SessionCaps{PerGuild: 3}) })
	}
	wg.Wait()
	ok, capped := 0, 0
	for _, err := range errs {
		var c *master.CapError
		switch {
		case err == nil:
			ok++
		case errors.As(err, &c) && !c.PerUser && c.Limit == 3 && errors.Is(err, master.ErrCapped):
			capped++
		default:
			t.Errorf("StartSession: %v", err)
		}
	}
	if ok != 3 || capped != 5 {
		t.Errorf("%d started and %d refused, want 3 and 5", ok, capped)
	}
	// Per person: another guild, one owner.
	caps := master.SessionCaps{PerGuild: 10, PerUser: 2}
	for i := range 3 {
		err := start("g-user", "alice", caps)
		var c *master.CapError
		if want := i < 2; (err == nil) != want || (!want && (!errors.As(err, &c) || !c.PerUser || c.Limit != 2)) {
			t.Errorf("alice's session %d: %v", i+1, err)
		}
	}
	if err := start("g-user", "bob", caps); err != nil {
		t.Errorf("bob's first session: %v", err)
	}
	if err := w.store.CheckCaps(w.ctx, "g-user", "alice", caps); !errors.Is(err, master.ErrCapped) {
		t.Errorf("CheckCaps for alice = %v, want the cap", err)
	}
}

// Usage is charged by model and to the guild's day as each call settles;
// a hold is refused past either budget, and an admin's budget replaces
// the default.
func TestSpendAndBudgets(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	other := w.startSession() // same guild
	w.charge(s.ID, master.Usage{PromptTokens: 60, CompletionTokens: 10, Model: "big"})
	w.charge(s.ID, master.Usage{PromptTokens: 20, CompletionTokens: 10, Model: "small"})
	w.charge(other.ID, master.Usage{PromptTokens: 5, CompletionTokens: 5, Model: "big"})
	sp, err := w.store.SessionSpend(w.ctx, s.ID)
	if err != nil || fmt.Sprint(sp.ByModel) != "[{60 10 big} {20 10 small}]" || sp.Budget != nil {
		t.Errorf("SessionSpend = %+v, %v", sp, err)
	}
	gs, err := w.store.GuildSpend(w.ctx, "g1")
	if err != nil || fmt.Sprint(gs.Today) != "[{65 15 big} {20 10 small}]" || gs.DailyBudget != nil {
		t.Errorf("GuildSpend = %+v, %v", gs, err)
	}
	check := func(def master.Budget) error {
		held, err := w.store.HoldSpend(w.ctx, master.Hold{SessionID: s.ID, Model: "big", PromptTokens: 1, Owner: "p", Budget: def})
		if err == nil {
			if err := w.store.SettleSpend(w.ctx, held.ID, master.Usage{}); err != nil {
				t.Fatal(err)
			}
		}
		return err
	}
	for _, tc := range []struct {
		name string
		def  master.Budget
		want *master.BudgetError // nil: allowed
	}{
		{"no budgets", master.Budget{}, nil},
		{"under the team's", master.Budget{SessionTokens: 101}, nil},
		{"at the team's", master.Budget{SessionTokens: 100}, &master.BudgetError{Limit: 100, Used: 100}},
		{"the guild's day: both teams", master.Budget{GuildDailyTokens: 110}, &master.BudgetError{Guild: true, Limit: 110, Used: 110}},
	} {
		err := check(tc.def)
		var b *master.BudgetError
		if tc.want == nil && err != nil || tc.want != nil && (!errors.As(err, &b) || *b != *tc.want || !errors.Is(err, master.ErrBudget)) {
			t.Errorf("%s: HoldSpend = %v, want %v", tc.name, err, tc.want)
		}
	}
	// Admins' budgets win over the defaults, and are audited.
	raised, none := int64(1000), int64(0)
	if err := w.store.SetSessionBudget(w.ctx, s.ID, &raised, "admin"); err != nil {
		t.Fatal(err)
	}
	if err := w.store.SetGuildBudget(w.ctx, "g1", &none, "admin"); err != nil {
		t.Fatal(err)
	}
	if err := check(master.Budget{SessionTokens: 100, GuildDailyTokens: 110}); err != nil {
		t.Errorf("HoldSpend after raising both = %v, want nil", err)
	}
	if err := w.store.SetSessionBudget(w.ctx, s.ID, nil, "admin2"); err != nil {
		t.Fatal(err)
	}
	if err := check(master.Budget{SessionTokens: 100}); !errors.Is(err, master.ErrBudget) {
		t.Errorf("HoldSpend back to the default = %v, want the budget", err)
	}
	changes, err := w.store.LimitChanges(w.ctx, "g1", 10)
	if err != nil || len(changes) != 3 || changes[0].What != "team_budget" || changes[0].By != "admin2" ||
		changes[1].What != "guild_budget" || string(changes[1].Detail) != `{"daily_tokens": 0}` {
		t.Errorf("LimitChanges = %+v, %v", changes, err)
	}
	if err := w.store.SetSessionBudget(w.ctx, 999999, &raised, "admin"); !errors.Is(err, master.ErrNotFound) {
		t.Errorf("SetSessionBudget of no session = %v, want ErrNotFound", err)
	}
}

// At most MaxOpen turns wait per session, however many messages come at
// once; the others are refused, and the thread is told once per burst.
func TestAdmissionBoundsTheQueue(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	a := master.Admission{MaxOpen: 3, QueueFull: "queue full", RateLimited: "slow down", Refused: "not you"}
	record := func(msgID, author string, state master.TurnState) (master.Turn, bool) {
		t.Helper()
		turn, created, err := w.store.RecordTurn(w.ctx, master.Turn{SessionID: s.ID, MessageID: msgID, GuildID: s.GuildID,
			ChannelID: s.ThreadID, AuthorID: author, Content: "m", State: state}, a)
		if err != nil {
			t.Fatal(err)
		}
		return turn, created
	}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() { record(fmt.Sprint(1000+i), "u1", master.TurnQueued) })
	}
	wg.Wait()
	counts := func() (queued, refused, notices int) {
		t.Helper()
		if err := w.pool.QueryRow(w.ctx, `SELECT count(*) FILTER (WHERE state = 'queued'), count(*) FILTER (WHERE state = 'refused'),
			(SELECT count(*) FROM outbox WHERE session_id = $1 AND kind = 'notice')
			FROM turns WHERE session_id = $1`, s.ID).Scan(&queued, &refused, &notices); err != nil {
			t.Fatal(err)
		}
		return
	}
	if q, r, n := counts(); q != 3 || r != 9 || n != 1 {
		t.Errorf("after 12 messages at once: %d queued, %d refused, %d notices; want 3, 9, 1", q, r, n)
	}
	// A redelivered message stays as it was.
	var was master.TurnState
	if err := w.pool.QueryRow(w.ctx, `SELECT state FROM turns WHERE message_id = '1011'`).Scan(&was); err != nil {
		t.Fatal(err)
	}
	if turn, created := record("1011", "u1", master.TurnQueued); created || turn.State != was {
		t.Errorf("redelivery: created %v, state %s; want the turn as it was, %s", created, turn.State, was)
	}
	// Once the queue moves, a message is admitted; the next burst is told
	// again.
	if _, err := w.pool.Exec(w.ctx, `UPDATE turns SET state = 'done' WHERE session_id = $1 AND state = 'queued'`, s.ID); err != nil {
		t.Fatal(err)
	}
	if turn, _ := record("2000", "u1", master.TurnQueued); turn.State != master.TurnQueued {
		t.Errorf("after the queue emptied: state %s, want queued", turn.State)
	}
	if turn, _ := record("2001", "u2", master.TurnRefused); turn.State != master.TurnRefused {
		t.Errorf("refused by the caller: state %s", turn.State)
	}
	record("2002", "u2", master.TurnRefused)
	if _, _, n := counts(); n != 2 {
		t.Errorf("%d notices, want 2: one per burst", n)
	}
	var texts []string
	rows, err := w.pool.Query(w.ctx, `SELECT content FROM outbox WHERE session_id = $1 AND kind = 'notice' ORDER BY id`, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c string
		_ = rows.Scan(&c)
		texts = append(texts, c)
	}
	if fmt.Sprint(texts) != "[queue full not you]" {
		t.Errorf("notices %q, want the queue's then the caller's", texts)
	}
}

// An author past the rate is refused in every session of the guild.
func TestAdmissionRatePerAuthor(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s1, s2 := w.startSession(), w.startSession()
	a := master.Admission{PerMinute: 3, RateLimited: "slow down"}
	var states []master.TurnState
	for i := range 5 {
		s := s1
		if i%2 == 1 {
			s = s2
		}
		turn, _, err := w.store.RecordTurn(w.ctx, master.Turn{SessionID: s.ID, MessageID: fmt.Sprint(3000 + i), GuildID: "g1",
			ChannelID: s.ThreadID, AuthorID: "spammer", Content: "m"}, a)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, turn.State)
	}
	if fmt.Sprint(states) != "[queued queued queued refused refused]" {
		t.Errorf("states %v, want three admitted, then refused", states)
	}
	turn, _, err := w.store.RecordTurn(w.ctx, master.Turn{SessionID: s1.ID, MessageID: "3100", GuildID: "g1",
		ChannelID: s1.ThreadID, AuthorID: "someone-else", Content: "m"}, a)
	if err != nil || turn.State != master.TurnQueued {
		t.Errorf("another author: %s, %v; want queued", turn.State, err)
	}
}

func TestAccessRules(t *testing.T) {
	t.Parallel()
	w := setup(t)
	rules := []master.AccessRule{{Action: master.AccessStart, Kind: master.AccessRole, ID: "111"},
		{Action: master.AccessStart, Kind: master.AccessChannel, ID: "222"}, {Action: master.AccessTalk, Kind: master.AccessUser, ID: "333"}}
	if n, err := w.store.AllowAccess(w.ctx, "g1", rules, "admin"); n != 3 || err != nil {
		t.Fatalf("AllowAccess = %d, %v", n, err)
	}
	if n, err := w.store.AllowAccess(w.ctx, "g1", rules[:1], "admin"); n != 0 || err != nil {
		t.Errorf("AllowAccess again = %d, %v; want nothing new", n, err)
	}
	a, err := w.store.Access(w.ctx, "g1")
	if err != nil || len(a) != 3 {
		t.Fatalf("Access = %v, %v", a, err)
	}
	if !a.Allows(master.AccessStart, "x", []string{"111"}, "222") || a.Allows(master.AccessStart, "x", []string{"111"}, "999") ||
		a.Allows(master.AccessStart, "x", nil, "222") || !a.Allows(master.AccessTalk, "333", nil, "999") || a.Allows(master.AccessTalk, "x", nil, "") {
		t.Errorf("Access %v decides wrongly", a)
	}
	if n, err := w.store.RemoveAccess(w.ctx, "g1", rules[2:], "admin"); n != 1 || err != nil {
		t.Errorf("RemoveAccess = %d, %v", n, err)
	}
	if n, err := w.store.ClearAccess(w.ctx, "g1", master.AccessStart, "admin"); n != 2 || err != nil {
		t.Errorf("ClearAccess = %d, %v", n, err)
	}
	if a, _ := w.store.Access(w.ctx, "g1"); len(a) != 0 || !a.Allows(master.AccessTalk, "x", nil, "y") {
		t.Errorf("Access after clearing = %v, want none: everyone", a)
	}
	changes, err := w.store.LimitChanges(w.ctx, "g1", 10)
	if err != nil || len(changes) != 3 || changes[0].What != "access_clear" || changes[2].What != "access_allow" {
		t.Errorf("LimitChanges = %+v, %v; want allow, remove, clear (the no-op not recorded)", changes, err)
	}
}

// An author's messages sent at once to several threads cannot pass the
// rate together: they are counted under a lock per author and guild.
// (They were counted under each session's lock only, so messages to
// eight threads at once were all admitted.)
func TestAdmissionRatePerAuthorUnderConcurrency(t *testing.T) {
	t.Parallel()
	w := setup(t)
	var sessions []master.Session
	for range 8 {
		sessions = append(sessions, w.startSession())
	}
	a := master.Admission{PerMinute: 3, RateLimited: "slow down"}
	states := make([]master.TurnState, len(sessions))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() {
			turn, _, err := w.store.RecordTurn(w.ctx, master.Turn{SessionID: s.ID, MessageID: fmt.Sprint(5000 + i), GuildID: "g1",
				ChannelID: s.ThreadID, AuthorID: "spammer", Content: "m"}, a)
			if err != nil {
				t.Error(err)
			}
			states[i] = turn.State
		})
	}
	wg.Wait()
	admitted := 0
	for _, st := range states {
		if st == master.TurnQueued {
			admitted++
		}
	}
	if admitted != 3 {
		t.Errorf("%d of 8 messages sent at once admitted (%v), want the rate's 3", admitted, states)
	}
}
