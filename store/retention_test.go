package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// fill gives a session a turn with two tasks, signals, a webhook event,
// a report to a plain channel, a reply and usage; StartSession queued
// its kickoff.
func (w *world) fill(s master.Session) {
	w.t.Helper()
	turn, _ := w.enqueue(s.ID, task("researcher", "a"), task("writer", "b"))
	w.exec(`INSERT INTO signals (session_id, kind) VALUES ($1, 'PROGRESS'), ($1, 'REPORT')`, s.ID)
	w.exec(`INSERT INTO webhook_events (session_id, event, payload, state) VALUES ($1, 'session.started', '{}', 'failed')`, s.ID)
	w.exec(`INSERT INTO reports (from_session, from_turn, to_channel, summary, delivery) VALUES ($1, $2, 'c-ops', 's', 'posted')`, s.ID, turn)
	w.exec(`INSERT INTO outbox (session_id, turn_id, kind, channel_id, content, nonce) VALUES ($1, $2, 'reply', 't', 'r', 'n' || $2::bigint)`, s.ID, turn)
	w.exec(`UPDATE outbox SET state = 'failed' WHERE session_id = $1`, s.ID) // delivered or given up
	w.charge(s.ID, master.Usage{PromptTokens: 3, CompletionTokens: 1, Model: "m"})
}

func (w *world) exec(sql string, args ...any) {
	w.t.Helper()
	if _, err := w.pool.Exec(w.ctx, sql, args...); err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
}

// end dissolves a session as if it ended ago.
func (w *world) end(s master.Session, ago time.Duration) {
	w.t.Helper()
	if _, err := w.pool.Exec(w.ctx, `UPDATE sessions SET state = 'dissolved', ended_at = now() - $2::interval WHERE id = $1`, s.ID, ago); err != nil {
		w.t.Fatal(err)
	}
}

// rows counts a session's rows in every table retention deletes from.
func (w *world) rows(s master.Session) string {
	w.t.Helper()
	var sess, turns, tasks, signals, outbox, hooks, reports, roles, usage int
	err := w.pool.QueryRow(w.ctx, `SELECT
		(SELECT count(*) FROM sessions WHERE id = $1), (SELECT count(*) FROM turns WHERE session_id = $1),
		(SELECT count(*) FROM tasks WHERE session_id = $1), (SELECT count(*) FROM signals WHERE session_id = $1),
		(SELECT count(*) FROM outbox WHERE session_id = $1), (SELECT count(*) FROM webhook_events WHERE session_id = $1),
		(SELECT count(*) FROM reports WHERE from_session = $1), (SELECT count(*) FROM session_roles WHERE session_id = $1),
		(SELECT count(*) FROM session_usage WHERE session_id = $1)`, s.ID).
		Scan(&sess, &turns, &tasks, &signals, &outbox, &hooks, &reports, &roles, &usage)
	if err != nil {
		w.t.Fatal(err)
	}
	return fmt.Sprintf("session %d turns %d tasks %d signals %d outbox %d webhooks %d reports %d roles %d usage %d",
		sess, turns, tasks, signals, outbox, hooks, reports, roles, usage)
}

// Retention deletes every row of the sessions that ended before the
// cutoff, and only those: recent ones, active ones, ended ones an active
// team links to (by a report into it, or a dispatch) and ones with a
// message still being delivered are kept whole, and so is the audit
// trail.
func TestPurgeEndedKeepsWhatItShould(t *testing.T) {
	t.Parallel()
	w := setup(t)
	old, recent, active, reporter, dispatched, sending := w.startSession(), w.startSession(), w.startSession(), w.startSession(), w.startSession(), w.startSession()
	for _, s := range []master.Session{old, recent, active, reporter, dispatched, sending} {
		w.fill(s)
	}
	w.exec(`UPDATE outbox SET state = 'pending' WHERE session_id = $1 AND kind = 'kickoff'`, sending.ID)
	w.end(sending, 48*time.Hour)
	w.end(old, 48*time.Hour)
	w.end(recent, time.Minute)
	w.end(reporter, 48*time.Hour)
	w.end(dispatched, 48*time.Hour)
	// The reporter's report went into the active team; the active team
	// dispatched the other.
	w.exec(`UPDATE reports SET to_session = $2 WHERE from_session = $1`, reporter.ID, active.ID)
	w.exec(`UPDATE sessions SET dispatched_by = $2 WHERE id = $1`, dispatched.ID, active.ID)
	w.exec(`INSERT INTO guild_usage (guild_id, day, model, prompt_tokens) VALUES ('g1', current_date - 3, 'm', 9)`)
	budget := int64(5)
	if err := w.store.SetSessionBudget(w.ctx, old.ID, nil, "admin"); err == nil {
		t.Fatal("SetSessionBudget of an ended session worked")
	}
	if err := w.store.SetSessionBudget(w.ctx, active.ID, &budget, "admin"); err != nil {
		t.Fatal(err)
	}
	before := map[int64]string{}
	for _, s := range []master.Session{recent, active, reporter, dispatched, sending} {
		before[s.ID] = w.rows(s)
	}
	full := w.rows(old)

	p, ran, err := w.store.PurgeEnded(w.ctx, time.Now().Add(-time.Hour), 2)
	if err != nil || !ran {
		t.Fatalf("PurgeEnded = %v, %v", ran, err)
	}
	if got, want := w.rows(old), "session 0 turns 0 tasks 0 signals 0 outbox 0 webhooks 0 reports 0 roles 0 usage 0"; got != want {
		t.Errorf("the old session's rows: %s, want none (had %s)", got, full)
	}
	for _, s := range []master.Session{recent, active, reporter, dispatched, sending} {
		if got := w.rows(s); got != before[s.ID] {
			t.Errorf("session %d: %s, want it untouched: %s", s.ID, got, before[s.ID])
		}
	}
	// The old session had a turn and its tasks (kickoff in the outbox,
	// the reply), two signals, an event, a report; the guild's old day.
	want := master.Purged{Sessions: 1, Turns: 1, Tasks: 2, Signals: 2, Outbox: 2, WebhookEvents: 1, Reports: 1, GuildUsage: 1}
	if p != want {
		t.Errorf("purged %+v, want %+v", p, want)
	}
	var days, audits int
	if err := w.pool.QueryRow(w.ctx, `SELECT (SELECT count(*) FROM guild_usage), (SELECT count(*) FROM limit_changes)`).Scan(&days, &audits); err != nil {
		t.Fatal(err)
	}
	if days != 1 || audits != 1 {
		t.Errorf("%d guild usage days and %d audit entries left, want today's and the budget change", days, audits)
	}
	// Once the active team ends and ages, what it linked to goes too.
	w.end(active, 48*time.Hour)
	if p, _, err := w.store.PurgeEnded(w.ctx, time.Now().Add(-time.Hour), 100); err != nil || p.Sessions != 3 {
		t.Errorf("second purge: %+v, %v; want the three linked sessions", p, err)
	}
}

// One process purges at a time: while another holds the lock, nothing
// is done.
func TestPurgeEndedOneAtATime(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	w.end(s, 48*time.Hour)
	w.exec(`UPDATE outbox SET state = 'failed' WHERE session_id = $1`, s.ID)
	conn, err := w.pool.Acquire(w.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(w.ctx, `SELECT pg_advisory_lock($1, 0)`, int32(0x70757267)); err != nil {
		t.Fatal(err)
	}
	if p, ran, err := w.store.PurgeEnded(w.ctx, time.Now(), 10); ran || err != nil || p.Total() != 0 {
		t.Errorf("PurgeEnded while locked = %+v, %v, %v; want nothing done", p, ran, err)
	}
	if _, err := conn.Exec(w.ctx, `SELECT pg_advisory_unlock($1, 0)`, int32(0x70757267)); err != nil {
		t.Fatal(err)
	}
	if p, ran, err := w.store.PurgeEnded(w.ctx, time.Now(), 10); !ran || err != nil || p.Sessions != 1 {
		t.Errorf("PurgeEnded = %+v, %v, %v; want the session purged", p, ran, err)
	}
}
