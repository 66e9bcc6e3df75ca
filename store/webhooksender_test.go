package store_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/webhook"
)

// The webhook sender against the real store and an HTTP receiver: the
// retry schedule lives in rows, so a test makes a retry due with SQL
// instead of waiting for it.

const secret = "s3cret-key"

// delivery is one request the receiver got.
type delivery struct {
	header http.Header
	body   []byte
}

// receiver is an httptest webhook endpoint answering with the statuses
// it is given, in order (the last one repeats).
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []delivery
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			t.Errorf("read body: %v", err)
		}
		r.mu.Lock()
		r.got = append(r.got, delivery{header: req.Header.Clone(), body: body})
		status := r.statuses[min(len(r.got), len(r.statuses))-1]
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// checkSigned verifies d the way a receiver would: the HMAC of the exact
// body bytes, and the headers naming the event.
func checkSigned(t *testing.T, d delivery, event string) {
	t.Helper()
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(d.body)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	if got := d.header.Get("X-Callon-Signature"); got != want {
		t.Errorf("X-Callon-Signature = %q, want %q", got, want)
	}
	if !webhook.VerifyLegacy(secret, d.body, d.header.Get("X-Callon-Signature")) || webhook.VerifyLegacy("other", d.body, want) {
		t.Error("VerifyLegacy disagrees with the HMAC")
	}
	if id, err := webhook.Verify(secret, d.header, d.body, time.Now()); err != nil || id != d.header.Get("X-Callon-Delivery") {
		t.Errorf("Verify = %q, %v; want the delivery's id", id, err)
	}
	var env struct {
		ID    int64  `json:"id"`
		Event string `json:"event"`
	}
	if err := json.Unmarshal(d.body, &env); err != nil {
		t.Fatalf("body %s: %v", d.body, err)
	}
	if env.Event != event || d.header.Get("X-Callon-Event") != event || d.header.Get("X-Callon-Delivery") != strconv.FormatInt(env.ID, 10) {
		t.Errorf("event %q, headers %v; want %s with the body's id %d as delivery", env.Event, d.header, event, env.ID)
	}
	if d.header.Get("Content-Type") != "application/json" || !strings.HasPrefix(d.header.Get("User-Agent"), "callon/") {
		t.Errorf("headers %v, want JSON from callon/…", d.header)
	}
}

// hookWorld is a store with webhooks on, the sender, and a receiver.
type hookWorld struct {
	*world
	rcv    *receiver
	sender *master.WebhookSender
}

func setupHooks(t *testing.T, retries int, statuses ...int) *hookWorld {
	t.Helper()
	w := setup(t)
	w.store.EnableWebhooks(true)
	rcv := newReceiver(t, statuses...)
	post := webhook.New(rcv.srv.URL+"/hook?token=t0ken", secret, "callon/test", nil)
	sender := master.NewWebhookSender(master.WebhookSenderConfig{Retries: retries}, w.store, post, slog.New(slog.DiscardHandler))
	return &hookWorld{world: w, rcv: rcv, sender: sender}
}

// flush runs one round of the sender and returns how many events it claimed.
func (w *hookWorld) flush() int {
	w.t.Helper()
	n, err := w.sender.Flush(w.ctx)
	if err != nil {
		w.t.Fatal(err)
	}
	return n
}

// dueAll makes every pending event due now, as if its retry time came.
func (w *hookWorld) dueAll() {
	w.t.Helper()
	if _, err := w.pool.Exec(w.ctx, `UPDATE webhook_events SET next_attempt_at = now() WHERE state = 'pending'`); err != nil {
		w.t.Fatal(err)
	}
}

// state reads the one webhook event.
func (w *hookWorld) state() (state string, attempts int) {
	w.t.Helper()
	if err := w.pool.QueryRow(w.ctx, `SELECT state, attempts FROM webhook_events`).Scan(&state, &attempts); err != nil {
		w.t.Fatal(err)
	}
	return state, attempts
}

// hooks returns the session's WEBHOOK signal payloads.
func (w *hookWorld) hooks(sessionID int64) []map[string]any {
	w.t.Helper()
	var out []map[string]any
	for _, s := range w.signals(sessionID) {
		if s.Kind != master.SignalWebhook {
			continue
		}
		var p map[string]any
		if err := json.Unmarshal(s.Payload, &p); err != nil {
			w.t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func TestSenderSignsAndDelivers(t *testing.T) {
	t.Parallel()
	w := setupHooks(t, 5, http.StatusNoContent)
	s := w.startSession()
	if n := w.flush(); n != 1 {
		t.Fatalf("claimed %d events, want 1", n)
	}
	ds := w.rcv.deliveries()
	if len(ds) != 1 {
		t.Fatalf("receiver got %d deliveries, want 1", len(ds))
	}
	checkSigned(t, ds[0], "session.started")
	if state, attempts := w.state(); state != "delivered" || attempts != 1 {
		t.Errorf("event %s after %d attempts, want delivered after 1", state, attempts)
	}
	if h := w.hooks(s.ID); len(h) != 1 || h[0]["delivered"] != true || h[0]["status"] != 204.0 {
		t.Errorf("WEBHOOK signals = %v, want one delivery with status 204", h)
	}
	if n := w.flush(); n != 0 {
		t.Errorf("a delivered event was claimed again")
	}
}

func TestSenderRetriesAfterA500ThenDelivers(t *testing.T) {
	t.Parallel()
	w := setupHooks(t, 5, http.StatusInternalServerError, http.StatusOK)
	s := w.startSession()
	w.flush()
	if state, attempts := w.state(); state != "pending" || attempts != 1 {
		t.Fatalf("after a 500: %s, %d attempts; want pending, 1", state, attempts)
	}
	if n := w.flush(); n != 0 {
		t.Fatal("a failed event was retried before its backoff")
	}
	w.dueAll()
	w.flush()
	if state, attempts := w.state(); state != "delivered" || attempts != 2 {
		t.Fatalf("after the retry: %s, %d attempts; want delivered, 2", state, attempts)
	}
	ds := w.rcv.deliveries()
	if len(ds) != 2 || string(ds[0].body) != string(ds[1].body) || ds[0].header.Get("X-Callon-Delivery") != ds[1].header.Get("X-Callon-Delivery") {
		t.Fatalf("deliveries %d, want 2 of the same event, byte for byte", len(ds))
	}
	checkSigned(t, ds[1], "session.started")
	h := w.hooks(s.ID)
	if len(h) != 2 || h[0]["status"] != 500.0 || h[0]["delivered"] != false || h[0]["error"] != "HTTP 500" ||
		h[1]["status"] != 200.0 || h[1]["delivered"] != true || h[1]["attempt"] != 2.0 {
		t.Errorf("WEBHOOK signals = %v, want a 500 then a delivery", h)
	}
	// The first retry waits between half the base delay (1 s) and all of it.
	if ms := h[0]["retry_in_ms"].(float64); ms < 500 || ms > 1000 {
		t.Errorf("first retry in %v ms, want 500 to 1000", ms)
	}
}

func TestSenderGivesUpAfterItsRetries(t *testing.T) {
	t.Parallel()
	w := setupHooks(t, 2, http.StatusServiceUnavailable)
	s := w.startSession()
	for range 3 {
		if n := w.flush(); n != 1 {
			t.Fatalf("claimed %d, want the event", n)
		}
		w.dueAll()
	}
	if n := w.flush(); n != 0 {
		t.Errorf("claimed %d after the last retry, want none", n)
	}
	if state, attempts := w.state(); state != "failed" || attempts != 3 {
		t.Errorf("event %s after %d attempts, want failed after 3 (2 retries)", state, attempts)
	}
	if n := len(w.rcv.deliveries()); n != 3 {
		t.Errorf("receiver got %d deliveries, want 3", n)
	}
	h := w.hooks(s.ID)
	if len(h) != 3 {
		t.Fatalf("WEBHOOK signals = %v, want 3", h)
	}
	for i, p := range h {
		if p["status"] != 503.0 || p["attempt"] != float64(i+1) || p["delivered"] != false {
			t.Errorf("signal %d = %v, want attempt %d, status 503", i, p, i+1)
		}
	}
	if h[2]["failed"] != true || h[1]["failed"] != nil {
		t.Errorf("signals %v, want only the last one failed", h)
	}
	// Backoff grows: the second wait is at least the first one's longest.
	if a, b := h[0]["retry_in_ms"].(float64), h[1]["retry_in_ms"].(float64); a > 1000 || b < 1000 || b > 2000 {
		t.Errorf("retries in %v ms then %v ms, want 500–1000 then 1000–2000", a, b)
	}
}

func TestSenderTakesA400AsPermanent(t *testing.T) {
	t.Parallel()
	w := setupHooks(t, 5, http.StatusBadRequest)
	s := w.startSession()
	w.flush()
	w.dueAll()
	if n := w.flush(); n != 0 {
		t.Error("a refused event was retried")
	}
	if state, attempts := w.state(); state != "failed" || attempts != 1 {
		t.Errorf("event %s after %d attempts, want failed after 1", state, attempts)
	}
	if h := w.hooks(s.ID); len(h) != 1 || h[0]["status"] != 400.0 || h[0]["failed"] != true {
		t.Errorf("WEBHOOK signals = %v, want one permanent failure", h)
	}
}

// A receiver's Retry-After holds the event back that long (bounded to
// an hour), however short the backoff would be.
func TestSenderHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		retryAfter string
		want       time.Duration
	}{{"600", 10 * time.Minute}, {"86400", master.MaxRetryAfter}} {
		w := setup(t)
		w.store.EnableWebhooks(true)
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			rw.Header().Set("Retry-After", c.retryAfter)
			rw.WriteHeader(http.StatusServiceUnavailable)
		}))
		t.Cleanup(srv.Close)
		sender := master.NewWebhookSender(master.WebhookSenderConfig{Retries: 5}, w.store,
			webhook.New(srv.URL, secret, "callon/test", nil), slog.New(slog.DiscardHandler))
		w.startSession()
		if _, err := sender.Flush(w.ctx); err != nil {
			t.Fatal(err)
		}
		var state string
		var wait time.Duration
		if err := w.pool.QueryRow(w.ctx, `SELECT state, next_attempt_at - now() FROM webhook_events`).Scan(&state, &wait); err != nil {
			t.Fatal(err)
		}
		if state != "pending" || wait < c.want-time.Minute || wait > c.want {
			t.Errorf("Retry-After %s: event %s, due in %v; want pending, due in about %v", c.retryAfter, state, wait, c.want)
		}
	}
}
