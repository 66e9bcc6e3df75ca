package store_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// startAPISession starts a team the API asked for with key.
func (w *world) startAPISession(key, thread, callback string) (master.Session, error) {
	return w.store.StartSession(w.ctx, master.Session{GuildID: "g1", ChannelID: "c1", ThreadID: thread,
		OwnerID: "u1", Goal: "ship it", APIKey: key, CallbackURL: callback}, master.DefaultRoles(), "kickoff!", "", master.SessionCaps{})
}

// Concurrent requests with one key: one claims it, the others hear it is
// in progress; once its team started, every request gets that team; and
// a second team with the key is refused by the database itself.
func TestAPIKeyStartsOneTeam(t *testing.T) {
	t.Parallel()
	w := setup(t)
	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	claimed, busy := 0, 0
	for range n {
		wg.Go(func() {
			_, ok, err := w.store.ClaimAPIKey(w.ctx, "key-1", time.Minute)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case ok:
				claimed++
			case errors.Is(err, master.ErrInProgress):
				busy++
			default:
				t.Errorf("ClaimAPIKey = %v, %v; want claimed or in progress", ok, err)
			}
		})
	}
	wg.Wait()
	if claimed != 1 || busy != n-1 {
		t.Fatalf("got %d claims and %d in progress, want 1 and %d", claimed, busy, n-1)
	}
	s, err := w.startAPISession("key-1", "th-api-1", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.startAPISession("key-1", "th-api-2", ""); !errors.Is(err, master.ErrKeyUsed) {
		t.Errorf("a second team with the key: %v, want ErrKeyUsed", err)
	}
	if err := w.store.ReleaseAPIKey(w.ctx, "key-1"); err != nil {
		t.Fatal(err)
	}
	got, ok, err := w.store.ClaimAPIKey(w.ctx, "key-1", time.Minute)
	if err != nil || ok || got.ID != s.ID || got.APIKey != "key-1" {
		t.Errorf("ClaimAPIKey after the start = %+v, %v, %v; want session %d, not claimed", got, ok, err, s.ID)
	}
	// A claim whose request died lapses with its lease.
	if _, ok, _ := w.store.ClaimAPIKey(w.ctx, "key-2", time.Millisecond); !ok {
		t.Fatal("key-2 not claimed")
	}
	w.exec(`UPDATE api_claims SET lease_until = now() - interval '1 second' WHERE key = 'key-2'`)
	if _, ok, err := w.store.ClaimAPIKey(w.ctx, "key-2", time.Minute); !ok || err != nil {
		t.Errorf("claim after a lapsed lease = %v, %v; want claimed", ok, err)
	}
}

func TestSeenRequest(t *testing.T) {
	t.Parallel()
	w := setup(t)
	later := time.Now().Add(10 * time.Minute)
	if seen, err := w.store.SeenRequest(w.ctx, "msg_1", later); seen || err != nil {
		t.Fatalf("first sight = %v, %v; want not seen", seen, err)
	}
	if seen, err := w.store.SeenRequest(w.ctx, "msg_1", later); !seen || err != nil {
		t.Errorf("second sight = %v, %v; want seen", seen, err)
	}
	// An expired id is forgotten (its request is too old to pass anyway).
	if seen, _ := w.store.SeenRequest(w.ctx, "msg_2", time.Now().Add(-time.Second)); seen {
		t.Fatal("msg_2 seen at first sight")
	}
	if seen, err := w.store.SeenRequest(w.ctx, "msg_3", later); seen || err != nil {
		t.Fatalf("msg_3 = %v, %v", seen, err)
	}
	var n int
	if err := w.pool.QueryRow(w.ctx, `SELECT count(*) FROM api_seen WHERE id = 'msg_2'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("expired id kept (%d rows, %v), want purged", n, err)
	}
}

// A team with a callback and no report_to channel reports to its
// callback alone: a session.reported event for that URL, even with the
// deployment's webhooks off; and the API's view shows the report.
func TestCallbackReceivesReports(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s, err := w.startAPISession("key-cb", "th-cb", "https://dispatcher.example/callon")
	if err != nil {
		t.Fatal(err)
	}
	turn, _ := w.record(s, "m-cb")
	w.lease(s, "p1")
	w.store.OpenTurn(w.ctx, s.ID)
	g := master.Guard{SessionID: s.ID, TurnID: turn.ID, Owner: "p1"}
	rep, err := w.store.ReportBack(w.ctx, g, master.NewReport{Summary: "the endpoint ships", Posted: []string{"x"}, Turn: "x"})
	if err != nil || rep.Delivery != "callback" {
		t.Fatalf("ReportBack = %+v, %v; want delivered to the callback", rep, err)
	}
	evs, err := w.store.ClaimWebhooks(w.ctx, 10, time.Minute)
	if err != nil || len(evs) != 1 || evs[0].Kind != master.WebhookSessionReported || evs[0].URL != "https://dispatcher.example/callon" {
		t.Fatalf("events = %+v, %v; want one session.reported for the callback", evs, err)
	}
	var posted int
	if err := w.pool.QueryRow(w.ctx, `SELECT count(*) FROM outbox WHERE kind = 'report'`).Scan(&posted); err != nil || posted != 0 {
		t.Errorf("%d report messages queued (%v), want none: there is no channel to post in", posted, err)
	}
	v, err := w.store.SessionView(w.ctx, s.ID)
	if err != nil || v.LastReport == nil || v.LastReport.Summary != "the endpoint ships" || v.Session.CallbackURL == "" || v.OpenTurns != 1 {
		t.Errorf("SessionView = %+v, %v; want the report and one open turn", v, err)
	}
}

// A message added through the API is echoed in the thread, and its
// answer replies to no Discord message.
func TestAPITurnEchoes(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	turn, created, err := w.store.RecordTurn(w.ctx, master.Turn{SessionID: s.ID, MessageID: master.APIMessagePrefix + "1:k",
		GuildID: s.GuildID, ChannelID: s.ThreadID, AuthorID: "u1", Content: "status?", Echo: "📨 status?"}, master.Admission{})
	if err != nil || !created {
		t.Fatalf("RecordTurn = %v, %v", created, err)
	}
	var echo int
	if err := w.pool.QueryRow(w.ctx, `SELECT count(*) FROM outbox WHERE kind = 'notice' AND content = '📨 status?' AND channel_id = $1`,
		s.ThreadID).Scan(&echo); err != nil || echo != 1 {
		t.Errorf("%d echoes (%v), want 1", echo, err)
	}
	if _, created, _ := w.store.RecordTurn(w.ctx, master.Turn{SessionID: s.ID, MessageID: master.APIMessagePrefix + "1:k",
		GuildID: s.GuildID, ChannelID: s.ThreadID, AuthorID: "u1", Content: "status?", Echo: "📨 status?"}, master.Admission{}); created {
		t.Error("the same key made a second turn")
	}
	w.lease(s, "p1")
	w.store.OpenTurn(w.ctx, s.ID)
	g := master.Guard{SessionID: s.ID, TurnID: turn.ID, Owner: "p1"}
	if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutReply, State: master.TurnDone, Parts: []string{"all good"}}); err != nil {
		t.Fatal(err)
	}
	var replyTo *string
	if err := w.pool.QueryRow(w.ctx, `SELECT reply_to FROM outbox WHERE turn_id = $1 AND kind = 'reply'`, turn.ID).Scan(&replyTo); err != nil || replyTo != nil {
		t.Errorf("reply_to = %v, %v; want none", replyTo, err)
	}
}
