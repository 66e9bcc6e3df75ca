package store_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// flakyDiscord is the outbox's Discord: while down, every post fails as a
// 503 would; it records each post it took, by channel, in order.
type flakyDiscord struct {
	mu     sync.Mutex
	down   bool
	tries  int
	posted map[string][]string
}

func (d *flakyDiscord) Send(_ context.Context, m master.OutMessage) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tries++
	if d.down {
		return "", errors.New("503 Service Unavailable")
	}
	d.posted[m.ChannelID] = append(d.posted[m.ChannelID], m.Content)
	return m.Nonce, nil
}
func (d *flakyDiscord) Find(context.Context, master.OutMessage) (string, error) { return "", nil }
func (d *flakyDiscord) Edit(context.Context, string, string, string) error      { return nil }
func (d *flakyDiscord) Typing(context.Context, string) error                    { return nil }
func (d *flakyDiscord) Archive(context.Context, string) error                   { return nil }

func (d *flakyDiscord) set(down bool) (tries int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = down
	return d.tries
}

// reply finishes a new turn of s with parts.
func (w *world) reply(s master.Session, msgID string, parts ...string) {
	w.t.Helper()
	turn, _ := w.record(s, msgID)
	w.lease(s, "p1")
	if _, err := w.store.OpenTurn(w.ctx, s.ID); err != nil {
		w.t.Fatal(err)
	}
	g := master.Guard{SessionID: s.ID, TurnID: turn.ID, Owner: "p1"}
	if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutReply, State: master.TurnDone, Parts: parts}); err != nil {
		w.t.Fatal(err)
	}
}

// While Discord refuses every post, the outbox tries one message at a
// time (a probe) on each pass, however many channels wait, and no retry
// delay holds a probe back; the first success releases everything that
// waited, at once (no retry delay left to sit out: the probe interval is
// shorter than the test's steps, as the outage is longer than it in
// life), each channel's messages in order and each once.
func TestOutboxFollowsDiscordsRecovery(t *testing.T) {
	t.Parallel()
	w := setup(t)
	a, b := w.startSession(), w.startSession() // a kickoff each
	w.reply(a, "ma", "a1", "a2", "a3")
	w.reply(b, "mb", "b1")
	dc := &flakyDiscord{down: true, posted: map[string][]string{}}
	out := master.NewOutbox(master.OutboxConfig{Owner: "p1", ProbeEvery: time.Millisecond}, w.store, dc, slog.New(slog.DiscardHandler))
	if _, err := out.Flush(w.ctx); err != nil {
		t.Fatal(err)
	}
	first := dc.set(true)
	const probes = 4
	for range probes {
		if _, err := out.Flush(w.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := dc.set(false) - first; got != probes {
		t.Errorf("during the outage, %d passes after the first failure sent %d messages, want one probe each", probes, got)
	}
	for range 5 {
		if _, err := out.Flush(w.ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string][]string{a.ThreadID: {"kickoff!", "a1", "a2", "a3"}, b.ThreadID: {"kickoff!", "b1"}}
	for ch, msgs := range want {
		if got := dc.posted[ch]; !slices.Equal(got, msgs) {
			t.Errorf("after Discord came back, channel %s got %q, want %q", ch, got, msgs)
		}
	}
	var pending int
	w.pool.QueryRow(w.ctx, `SELECT count(*) FROM outbox WHERE state <> 'sent'`).Scan(&pending)
	if pending != 0 {
		t.Errorf("%d messages not sent once Discord was back", pending)
	}
}

// A probe takes a channel's first pending message only, one never tried
// before the ones that failed, and the one tried least recently among
// those; a retry delay does not hold it back.
func TestProbeOutboxPicksAChannelsFirstMessage(t *testing.T) {
	t.Parallel()
	w := setup(t)
	a := w.startSession()
	w.reply(a, "ma", "a1", "a2")
	// Every message of a failed once, the kickoff last; b's kickoff is new.
	msgs, err := w.store.ClaimOutbox(w.ctx, master.Scope{}, "p1", 10, time.Minute)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("claimed %d messages (%v), want a's three", len(msgs), err)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if err := w.store.MarkUnsent(w.ctx, msgs[i].ID, "503", time.Hour, false); err != nil {
			t.Fatal(err)
		}
	}
	b := w.startSession()
	probe := func() string {
		t.Helper()
		m, ok, err := w.store.ProbeOutbox(w.ctx, master.Scope{}, "p1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return ""
		}
		if err := w.store.MarkUnsent(w.ctx, m.ID, "503", time.Hour, false); err != nil {
			t.Fatal(err)
		}
		return m.ChannelID + " " + m.Content
	}
	got := []string{probe(), probe(), probe()}
	want := []string{b.ThreadID + " kickoff!", a.ThreadID + " kickoff!", b.ThreadID + " kickoff!"}
	if !slices.Equal(got, want) {
		t.Errorf("probes took %q, want %q", got, want)
	}
}

// Shortening the waits brings a message tried long ago forward to now,
// and one tried a moment ago to one interval after its try, no sooner.
func TestShortenWaits(t *testing.T) {
	t.Parallel()
	w := setup(t)
	w.startSession()
	w.startSession()
	msgs, err := w.store.ClaimOutbox(w.ctx, master.Scope{}, "p1", 10, time.Minute)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("claimed %d messages (%v), want two kickoffs", len(msgs), err)
	}
	for _, m := range msgs {
		if err := w.store.MarkUnsent(w.ctx, m.ID, "503", time.Hour, false); err != nil {
			t.Fatal(err)
		}
	}
	w.pool.Exec(w.ctx, `UPDATE outbox SET tried_at = now() - interval '10 minutes' WHERE id = $1`, msgs[0].ID)
	if n, err := w.store.ShortenWaits(w.ctx, time.Minute); err != nil || n != 2 {
		t.Fatalf("ShortenWaits = %d, %v; want 2", n, err)
	}
	var old, recent time.Duration
	w.pool.QueryRow(w.ctx, `SELECT
		extract(epoch FROM (SELECT lease_until - now() FROM outbox WHERE id = $1)) * interval '1 second',
		extract(epoch FROM (SELECT lease_until - tried_at FROM outbox WHERE id = $2)) * interval '1 second'`,
		msgs[0].ID, msgs[1].ID).Scan(&old, &recent)
	if old > 0 || recent != time.Minute {
		t.Errorf("after shortening: the old one waits %s more, the recent one %s after its try; want ≤ 0 and 1m", old, recent)
	}
	again, _ := w.store.ClaimOutbox(w.ctx, master.Scope{}, "p1", 10, time.Minute)
	if len(again) != 1 || again[0].ID != msgs[0].ID {
		t.Errorf("claimed %v after shortening, want only the message tried long ago", again)
	}
}
