package store_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// A team with nothing to answer goes to sleep when idle or archived, and
// stops counting against the caps; it wakes only within them.
func TestDormancy(t *testing.T) {
	t.Parallel()
	w := setup(t)
	busy, idle, other := w.startSession(), w.startSession(), w.startSession()
	if _, err := w.pool.Exec(w.ctx, `UPDATE sessions SET owner_id = 'u2' WHERE id = $1`, other.ID); err != nil {
		t.Fatal(err)
	}
	terminal := w.startOn(master.SurfaceTerminal, "")
	w.turn(busy.ID) // running: it keeps its team awake
	slept, err := w.store.SleepIdle(w.ctx, time.Now().Add(time.Minute), 10)
	slices.Sort(slept)
	if want := []int64{idle.ID, other.ID, terminal.ID}; err != nil || !slices.Equal(slept, want) {
		t.Fatalf("SleepIdle = %v, %v; want %v: every team with nothing queued or running", slept, err, want)
	}
	if got, _ := w.store.Session(w.ctx, idle.ID); got.DormantSince.IsZero() {
		t.Error("the idle team does not read as dormant")
	}
	// Dormant teams count against no cap: u1 has one awake team.
	caps := master.SessionCaps{PerUser: 1}
	var capped *master.CapError
	if err := w.store.CheckCaps(w.ctx, "g1", "u1", caps); !errors.As(err, &capped) || len(capped.Oldest) != 1 || capped.Oldest[0].ID != busy.ID {
		t.Errorf("CheckCaps at u1's cap = %v (oldest %+v), want a CapError naming its one awake team", err, capped)
	}
	if err := w.store.CheckCaps(w.ctx, "g1", "u2", caps); err != nil {
		t.Errorf("CheckCaps for u2, whose one team is dormant: %v", err)
	}
	// Waking happens within the caps only.
	if woke, err := w.store.WakeSession(w.ctx, idle.ID, caps); woke || !errors.As(err, &capped) {
		t.Errorf("waking u1's second team at a cap of 1: %v, %v; want a CapError", woke, err)
	}
	if woke, err := w.store.WakeSession(w.ctx, idle.ID, master.SessionCaps{PerUser: 2}); !woke || err != nil {
		t.Errorf("waking within the cap: %v, %v", woke, err)
	}
	if woke, err := w.store.WakeSession(w.ctx, idle.ID, caps); woke || err != nil {
		t.Errorf("waking an awake team: %v, %v; want nothing done", woke, err)
	}
	// Just woken, it is not idle, however old its turns.
	if slept, err := w.store.SleepIdle(w.ctx, time.Now().Add(-time.Second), 10); err != nil || len(slept) != 0 {
		t.Errorf("SleepIdle right after a wake = %v, %v; want none", slept, err)
	}
	// An archived thread puts its team to sleep unless it is at work.
	if ok, err := w.store.SleepSession(w.ctx, busy.ThreadID); ok || err != nil {
		t.Errorf("archiving a busy team's thread: %v, %v; want it awake", ok, err)
	}
	if ok, err := w.store.SleepSession(w.ctx, idle.ThreadID); !ok || err != nil {
		t.Errorf("archiving an idle team's thread: %v, %v; want it asleep", ok, err)
	}
	points, err := w.store.CatchUpPoints(w.ctx)
	if err != nil || len(points) != 1 || points[0].SessionID != busy.ID {
		t.Errorf("CatchUpPoints = %+v, %v; want the awake team's only", points, err)
	}
	dormant, err := w.store.DormantPoints(w.ctx)
	var ids []int64
	for _, p := range dormant {
		ids = append(ids, p.SessionID)
	}
	if want := []int64{idle.ID, other.ID}; err != nil || !slices.Equal(ids, want) {
		t.Errorf("DormantPoints = %v, %v; want the dormant Discord teams %v", ids, err, want)
	}
}

// The life cycle of teams under caps, as seeded random sequences of what
// people and time do to them (start a team, write in a thread, get an
// answer, time passing, Discord archiving a thread, dissolving), checked
// against a model after every event: no owner and no guild ever has more
// awake teams than the caps allow, a dormant team has nothing queued or
// running, a message to a dormant team wakes it when the caps allow and
// is refused (never queued) when they do not.
func TestDormancyLifecycle(t *testing.T) {
	t.Parallel()
	for i := range 8 {
		seed := uint64(time.Now().UnixNano()) + uint64(i)
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			runLifecycle(t, seed, 60)
		})
	}
}

// team is the model of one team.
type team struct {
	sess      master.Session
	awake     bool
	open      bool // a message waits for its answer
	dissolved bool
}

func runLifecycle(t *testing.T, seed uint64, events int) {
	w := setup(t)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	caps := master.SessionCaps{PerUser: 2, PerGuild: 3}
	svc := master.NewService(master.ServiceConfig{Caps: caps}, w.store, nil)
	owners := []string{"ann", "bob"}
	var teams []*team
	msg := int64(1_000_000)
	awake := func(owner string) (mine, all int) {
		for _, tm := range teams {
			if tm.awake && !tm.dissolved {
				all++
				if tm.sess.OwnerID == owner {
					mine++
				}
			}
		}
		return mine, all
	}
	pick := func() *team {
		var live []*team
		for _, tm := range teams {
			if !tm.dissolved {
				live = append(live, tm)
			}
		}
		if len(live) == 0 {
			return nil
		}
		return live[rng.IntN(len(live))]
	}
	for e := range events {
		what := ""
		switch op := rng.IntN(6); {
		case op == 0 || len(teams) == 0:
			owner := owners[rng.IntN(len(owners))]
			mine, all := awake(owner)
			thread := fmt.Sprintf("th-%d-%d", seed, e)
			sess, _, err := svc.StartSession(w.ctx, master.NewSession{GuildID: "g1", ChannelID: "c1", ThreadID: thread, OwnerID: owner, Goal: "goal"})
			allowed := mine < caps.PerUser && all < caps.PerGuild
			what = fmt.Sprintf("start by %s (awake %d/%d): %v", owner, mine, all, err)
			switch {
			case allowed && err != nil:
				t.Fatalf("event %d, %s: refused within the caps", e, what)
			case !allowed && !errors.Is(err, master.ErrCapped):
				t.Fatalf("event %d, %s: want a cap refusal", e, what)
			case allowed:
				teams = append(teams, &team{sess: sess, awake: true})
			}
		case op == 1:
			tm := pick()
			if tm == nil {
				continue
			}
			msg++
			mine, all := awake(tm.sess.OwnerID)
			turn, err := svc.HandleMessage(w.ctx, master.Incoming{ID: strconv.FormatInt(msg, 10), GuildID: "g1", ChannelID: tm.sess.ThreadID,
				AuthorID: "carl", Content: "hello"})
			what = fmt.Sprintf("message to team %d (awake %v; owner's %d/%d): %s %v", tm.sess.ID, tm.awake, mine, all, turn.State, err)
			if err != nil {
				t.Fatalf("event %d, %s", e, what)
			}
			canWake := tm.awake || (mine < caps.PerUser && all < caps.PerGuild)
			switch {
			case canWake && turn.State != master.TurnQueued:
				t.Fatalf("event %d, %s: want it queued", e, what)
			case !canWake && turn.State != master.TurnRefused:
				t.Fatalf("event %d, %s: want it refused (the team cannot wake)", e, what)
			case canWake:
				tm.awake, tm.open = true, true
			}
		case op == 2:
			tm := pick()
			if tm == nil {
				continue
			}
			if _, err := w.pool.Exec(w.ctx, `UPDATE turns SET state = 'done', updated_at = now()
				WHERE session_id = $1 AND state IN ('queued', 'running')`, tm.sess.ID); err != nil {
				t.Fatal(err)
			}
			tm.open = false
			what = fmt.Sprintf("team %d answered", tm.sess.ID)
		case op == 3:
			slept, err := w.store.SleepIdle(w.ctx, time.Now().Add(time.Hour), 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, tm := range teams {
				if tm.awake && !tm.open && !tm.dissolved {
					tm.awake = false
				}
			}
			what = fmt.Sprintf("time passes: %v slept", slept)
		case op == 4:
			tm := pick()
			if tm == nil {
				continue
			}
			slept, err := svc.ThreadArchived(w.ctx, tm.sess.ThreadID)
			if err != nil {
				t.Fatal(err)
			}
			if want := tm.awake && !tm.open; slept != want {
				t.Fatalf("event %d: archiving team %d (awake %v, open %v) slept %v", e, tm.sess.ID, tm.awake, tm.open, slept)
			}
			if slept {
				tm.awake = false
			}
			what = fmt.Sprintf("team %d archived: slept %v", tm.sess.ID, slept)
		case op == 5:
			tm := pick()
			if tm == nil {
				continue
			}
			if err := w.store.Dissolve(w.ctx, tm.sess.ID, "bye", nil, nil); err != nil {
				t.Fatal(err)
			}
			tm.dissolved = true
			what = fmt.Sprintf("team %d dissolved", tm.sess.ID)
		}
		checkLifecycle(t, w, e, what, caps, teams)
	}
}

// checkLifecycle compares the database with the model and checks the
// invariants.
func checkLifecycle(t *testing.T, w *world, e int, what string, caps master.SessionCaps, teams []*team) {
	t.Helper()
	ctx := context.Background()
	for _, tm := range teams {
		got, err := w.store.Session(ctx, tm.sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tm.dissolved {
			continue
		}
		if awake := got.DormantSince.IsZero(); awake != tm.awake {
			t.Fatalf("after event %d (%s): team %d awake = %v, the model says %v", e, what, tm.sess.ID, awake, tm.awake)
		}
	}
	var over int
	if err := w.pool.QueryRow(ctx, `SELECT count(*) FROM (
		SELECT owner_id FROM sessions WHERE state = 'active' AND dormant_since IS NULL GROUP BY owner_id HAVING count(*) > $1
		UNION ALL
		SELECT guild_id FROM sessions WHERE state = 'active' AND dormant_since IS NULL GROUP BY guild_id HAVING count(*) > $2) o`,
		caps.PerUser, caps.PerGuild).Scan(&over); err != nil || over != 0 {
		t.Fatalf("after event %d (%s): %d owners or guilds over the caps (%v)", e, what, over, err)
	}
	var busy int
	if err := w.pool.QueryRow(ctx, `SELECT count(*) FROM sessions s JOIN turns u ON u.session_id = s.id
		WHERE s.state = 'active' AND s.dormant_since IS NOT NULL AND u.state IN ('queued', 'running')`).Scan(&busy); err != nil || busy != 0 {
		t.Fatalf("after event %d (%s): %d turns queued or running in dormant teams (%v)", e, what, busy, err)
	}
}
