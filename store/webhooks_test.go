package store_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// hookEvent is a webhook_events row.
type hookEvent struct {
	ID       int64
	Event    string
	State    string
	Attempts int
	Payload  []byte
	Status   *int
	Error    *string
}

// hookEvents returns a session's webhook events, oldest first.
func (w *world) hookEvents(session int64) []hookEvent {
	w.t.Helper()
	rows, err := w.pool.Query(w.ctx, `SELECT id, event, state, attempts, payload, last_status, last_error
		FROM webhook_events WHERE session_id = $1 ORDER BY id`, session)
	if err != nil {
		w.t.Fatal(err)
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hookEvent, error) {
		var e hookEvent
		err := r.Scan(&e.ID, &e.Event, &e.State, &e.Attempts, &e.Payload, &e.Status, &e.Error)
		return e, err
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return evs
}

func kinds(evs []hookEvent) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Event)
	}
	return out
}

// envelope is a webhook body as a receiver reads it.
type envelope struct {
	ID      int64  `json:"id"`
	Event   string `json:"event"`
	At      string `json:"at"`
	Session struct {
		ID        int64  `json:"id"`
		GuildID   string `json:"guild_id"`
		ChannelID string `json:"channel_id"`
		ThreadID  string `json:"thread_id"`
		URL       string `json:"url"`
	} `json:"session"`
	Data map[string]any `json:"data"`
}

func decode(t testing.TB, body []byte) envelope {
	t.Helper()
	var e envelope
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("webhook body %s: %v", body, err)
	}
	return e
}

func TestWebhookEventsAreWrittenWithTheirChange(t *testing.T) {
	t.Parallel()
	w := setup(t)
	w.store.EnableWebhooks(true)
	s := w.startSession()

	evs := w.hookEvents(s.ID)
	if got := kinds(evs); !slices.Equal(got, []string{"session.started"}) {
		t.Fatalf("events after StartSession = %v, want [session.started]", got)
	}
	e := decode(t, evs[0].Payload)
	if e.ID != evs[0].ID || e.Event != "session.started" || e.Session.ID != s.ID || e.Session.ThreadID != s.ThreadID ||
		e.Session.GuildID != "g1" || e.Session.ChannelID != "c1" || e.Session.URL != "https://discord.com/channels/g1/"+s.ThreadID {
		t.Errorf("envelope = %+v, want id %d, session %d in thread %s with its jump URL", e, evs[0].ID, s.ID, s.ThreadID)
	}
	if _, err := time.Parse(time.RFC3339, e.At); err != nil {
		t.Errorf("at = %q, want RFC 3339: %v", e.At, err)
	}
	if e.Data["goal"] != "ship it" || e.Data["owner_id"] != "u1" || e.Data["report_to"] != nil || e.Data["dispatched_by"] != nil {
		t.Errorf("data = %v, want the goal, the owner, and null report_to and dispatched_by", e.Data)
	}
	if evs[0].State != "pending" || evs[0].Attempts != 0 {
		t.Errorf("new event: state %s, attempts %d; want pending, 0", evs[0].State, evs[0].Attempts)
	}

	// A change that fails writes nothing: the event is in its transaction.
	if _, err := w.store.StartSession(w.ctx, master.Session{GuildID: "g1", ChannelID: "c1", ThreadID: s.ThreadID,
		OwnerID: "u2", Goal: "again"}, master.DefaultRoles(), "", "", master.SessionCaps{}); !errors.Is(err, master.ErrSessionActive) {
		t.Fatalf("second StartSession: %v", err)
	}
	var n int
	if err := w.pool.QueryRow(w.ctx, `SELECT count(*) FROM webhook_events`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d events in all (%v), want 1", n, err)
	}

	if err := w.store.Dissolve(w.ctx, s.ID, "bye", nil, nil); err != nil {
		t.Fatal(err)
	}
	evs = w.hookEvents(s.ID)
	if got := kinds(evs); !slices.Equal(got, []string{"session.started", "session.dissolved"}) {
		t.Fatalf("events after Dissolve = %v", got)
	}
	if d := decode(t, evs[1].Payload).Data; d["summary"] != "bye" || d["cancelled_tasks"] != 0.0 || d["final_report"] != nil {
		t.Errorf("dissolved data = %v", d)
	}
}

func TestNoWebhookEventsWhenDisabled(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	if err := w.store.Dissolve(w.ctx, s.ID, "bye", nil, nil); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := w.pool.QueryRow(w.ctx, `SELECT count(*) FROM webhook_events`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d events (%v), want none while webhooks are disabled", n, err)
	}
}

func TestFinalReportWebhook(t *testing.T) {
	t.Parallel()
	w := setup(t)
	w.store.EnableWebhooks(true)
	s, err := w.store.StartSession(w.ctx, master.Session{GuildID: "g1", ChannelID: "c1", ThreadID: "th-report",
		OwnerID: "u1", Goal: "report", ReportTo: "ops"}, master.DefaultRoles(), "", "", master.SessionCaps{})
	if err != nil {
		t.Fatal(err)
	}
	final := master.NewReport{Summary: "all done", Final: true, Posted: []string{"all done"}}
	if err := w.store.Dissolve(w.ctx, s.ID, "bye", &final, nil); err != nil {
		t.Fatal(err)
	}
	evs := w.hookEvents(s.ID)
	if got := kinds(evs); !slices.Equal(got, []string{"session.started", "session.reported", "session.dissolved"}) {
		t.Fatalf("events = %v", got)
	}
	rep := decode(t, evs[1].Payload).Data
	if rep["summary"] != "all done" || rep["final"] != true || rep["delivery"] != "posted" || rep["to_channel"] != "ops" ||
		rep["from_thread"] != "th-report" || rep["report"] == nil {
		t.Errorf("reported data = %v", rep)
	}
	if d := decode(t, evs[2].Payload).Data; d["final_report"] != rep["report"] {
		t.Errorf("dissolved data = %v, want final_report %v", d, rep["report"])
	}
}

func TestBlockedWebhookWhenTheMasterRepliesOverABlockedTask(t *testing.T) {
	t.Parallel()
	w := setup(t)
	w.store.EnableWebhooks(true)
	s := w.startSession()
	w.lease(s, "p1")

	// run records a turn, delegates two tasks, ends them as given, and
	// finishes the turn with kind; it returns the turn's id.
	run := func(msg string, kind master.OutKind, outs ...master.Outcome) int64 {
		t.Helper()
		turn, _ := w.record(s, msg)
		if _, err := w.store.OpenTurn(w.ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		g := master.Guard{SessionID: s.ID, TurnID: turn.ID, Round: 0, Owner: "p1"}
		var tasks []master.NewTask
		for range outs {
			tasks = append(tasks, master.NewTask{Role: "researcher", Instruction: "dig"})
		}
		if _, err := w.store.Delegate(w.ctx, g, tasks); err != nil {
			t.Fatal(err)
		}
		for i, tk := range w.claim("w1", len(outs)) {
			if _, err := w.store.CompleteTask(w.ctx, tk.ID, tk.Attempt, outs[i]); err != nil {
				t.Fatal(err)
			}
		}
		g.Round = 1
		state := master.TurnDone
		if kind == master.OutQuestion {
			state = master.TurnWaiting
		}
		if err := w.store.Finish(w.ctx, g, master.Finish{Kind: kind, State: state, Parts: []string{"answer"}}); err != nil {
			t.Fatal(err)
		}
		return turn.ID
	}
	blocked := master.Outcome{State: master.TaskBlocked, Result: "no access to the repo"}
	done := master.Outcome{State: master.TaskDone, Result: "ok"}

	run("m1", master.OutReply, done, done)
	run("m2", master.OutQuestion, blocked) // asking the user is not escalating a block
	// The question's answer closes the waiting turn; then a reply over a
	// blocked task is.
	turn := run("m3", master.OutReply, done, blocked)

	evs := w.hookEvents(s.ID)
	if got := kinds(evs); !slices.Equal(got, []string{"session.started", "session.blocked"}) {
		t.Fatalf("events = %v, want one session.blocked", got)
	}
	d := decode(t, evs[1].Payload).Data
	roles, _ := d["roles"].([]any)
	list, _ := d["blocked"].([]any)
	if d["turn"] != float64(turn) || d["round"] != 1.0 || d["message_id"] != "m3" || len(roles) != 1 || roles[0] != "researcher" || len(list) != 1 {
		t.Fatalf("blocked data = %v, want turn %d round 1 with one blocked researcher", d, turn)
	}
	if b := list[0].(map[string]any); b["reason"] != "no access to the repo" || b["role"] != "researcher" || b["task"] == nil {
		t.Errorf("blocked task = %v", b)
	}
}

func TestClaimAndRecordWebhooks(t *testing.T) {
	t.Parallel()
	w := setup(t)
	w.store.EnableWebhooks(true)
	s := w.startSession()
	ev := w.hookEvents(s.ID)[0]

	claimed, err := w.store.ClaimWebhooks(w.ctx, 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 1 || claimed[0].ID != ev.ID || claimed[0].Attempt != 1 || claimed[0].Kind != master.WebhookSessionStarted ||
		claimed[0].SessionID != s.ID || decode(t, claimed[0].Body).ID != ev.ID {
		t.Fatalf("claimed %+v, want event %d at attempt 1", claimed, ev.ID)
	}
	if again, err := w.store.ClaimWebhooks(w.ctx, 10, time.Minute); err != nil || len(again) != 0 {
		t.Errorf("second claim = %v, %v; want nothing while the lease holds", again, err)
	}

	// A retry is pending again, due later; no sooner.
	if err := w.store.RecordWebhook(w.ctx, master.WebhookResult{EventID: ev.ID, Attempt: 1, Status: 503, Error: "HTTP 503", RetryIn: time.Hour}); err != nil {
		t.Fatal(err)
	}
	var due bool
	if err := w.pool.QueryRow(w.ctx, `SELECT next_attempt_at > now() + interval '59 minutes' FROM webhook_events WHERE id = $1`, ev.ID).Scan(&due); err != nil || !due {
		t.Errorf("retry scheduled an hour out: %v, %v", due, err)
	}
	if got := w.hookEvents(s.ID)[0]; got.State != "pending" || got.Attempts != 1 || *got.Status != 503 {
		t.Errorf("after a retryable failure: %+v", got)
	}
	// An answer for an attempt that is not the current one is stale.
	if err := w.store.RecordWebhook(w.ctx, master.WebhookResult{EventID: ev.ID, Attempt: 2, Delivered: true, Status: 200}); !errors.Is(err, master.ErrStale) {
		t.Errorf("recording attempt 2 of an event at attempt 1: %v, want ErrStale", err)
	}

	// Interrupted: handed back uncounted and due at once, without a signal.
	w.due(ev.ID)
	claimed, _ = w.store.ClaimWebhooks(w.ctx, 10, time.Minute)
	if len(claimed) != 1 || claimed[0].Attempt != 2 {
		t.Fatalf("claimed %+v, want attempt 2", claimed)
	}
	if err := w.store.RecordWebhook(w.ctx, master.WebhookResult{EventID: ev.ID, Attempt: 2, Interrupted: true}); err != nil {
		t.Fatal(err)
	}
	claimed, _ = w.store.ClaimWebhooks(w.ctx, 10, time.Minute)
	if len(claimed) != 1 || claimed[0].Attempt != 2 {
		t.Fatalf("after an interruption claimed %+v, want attempt 2 again, at once", claimed)
	}
	if err := w.store.RecordWebhook(w.ctx, master.WebhookResult{EventID: ev.ID, Attempt: 2, Delivered: true, Status: 204}); err != nil {
		t.Fatal(err)
	}
	if got := w.hookEvents(s.ID)[0]; got.State != "delivered" || got.Attempts != 2 || *got.Status != 204 || got.Error != nil {
		t.Errorf("after delivery: %+v", got)
	}
	if err := w.store.RecordWebhook(w.ctx, master.WebhookResult{EventID: ev.ID, Attempt: 2, Failed: true}); !errors.Is(err, master.ErrStale) {
		t.Errorf("recording on a delivered event: %v, want ErrStale", err)
	}

	var hooks []map[string]any
	for _, sg := range w.signals(s.ID) {
		if sg.Kind != master.SignalWebhook {
			continue
		}
		var p map[string]any
		if err := json.Unmarshal(sg.Payload, &p); err != nil {
			t.Fatal(err)
		}
		hooks = append(hooks, p)
	}
	if len(hooks) != 2 {
		t.Fatalf("WEBHOOK signals = %v, want 2 (the retry and the delivery)", hooks)
	}
	if h := hooks[0]; h["status"] != 503.0 || h["delivered"] != false || h["attempt"] != 1.0 || h["error"] != "HTTP 503" ||
		h["event"] != "session.started" || h["event_id"] != float64(ev.ID) || h["retry_in_ms"] != 3600000.0 {
		t.Errorf("first WEBHOOK = %v", h)
	}
	if h := hooks[1]; h["status"] != 204.0 || h["delivered"] != true || h["attempt"] != 2.0 || h["error"] != nil {
		t.Errorf("second WEBHOOK = %v", h)
	}
}

// due makes a pending webhook event due now, as if its retry time came.
func (w *world) due(id int64) {
	w.t.Helper()
	if _, err := w.pool.Exec(w.ctx, `UPDATE webhook_events SET next_attempt_at = now() WHERE id = $1`, id); err != nil {
		w.t.Fatal(err)
	}
}
