package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/webhook"
)

const hookSecret = "whsec-test"

// hookDelivery is one POST the webhook receiver got, with its status.
type hookDelivery struct {
	Header http.Header
	Body   []byte
	Status int
	Event  struct {
		ID      int64  `json:"id"`
		Event   string `json:"event"`
		Session struct {
			ID       int64  `json:"id"`
			ThreadID string `json:"thread_id"`
			URL      string `json:"url"`
		} `json:"session"`
		Data map[string]any `json:"data"`
	}
}

// hookReceiver is an outside dispatcher's endpoint. It checks every
// signature, and answers 500 to the first POST, 200 after.
type hookReceiver struct {
	t   *testing.T
	srv *httptest.Server
	mu  sync.Mutex
	got []hookDelivery
}

func newHookReceiver(t *testing.T) *hookReceiver {
	r := &hookReceiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var d hookDelivery
		d.Header = req.Header.Clone()
		d.Body, _ = io.ReadAll(req.Body)
		m := hmac.New(sha256.New, []byte(hookSecret))
		m.Write(d.Body)
		if sig := req.Header.Get("X-Callon-Signature"); sig != "sha256="+hex.EncodeToString(m.Sum(nil)) {
			t.Errorf("delivery with signature %q does not verify: %s", sig, d.Body)
		}
		id, err := webhook.Verify(hookSecret, req.Header, d.Body, time.Now())
		if err != nil {
			t.Errorf("delivery %s does not verify the Standard Webhooks way: %v", d.Body, err)
		}
		if err := json.Unmarshal(d.Body, &d.Event); err != nil {
			t.Errorf("delivery %s: %v", d.Body, err)
		}
		if req.Header.Get("X-Callon-Event") != d.Event.Event || req.Header.Get("X-Callon-Delivery") != strconv.FormatInt(d.Event.ID, 10) ||
			id != strconv.FormatInt(d.Event.ID, 10) {
			t.Errorf("headers %v disagree with the body %s", req.Header, d.Body)
		}
		r.mu.Lock()
		d.Status = http.StatusOK
		if len(r.got) == 0 {
			d.Status = http.StatusInternalServerError
		}
		r.got = append(r.got, d)
		r.mu.Unlock()
		w.WriteHeader(d.Status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// deliveries lists the POSTs of one event kind, in order.
func (r *hookReceiver) deliveries(event string) []hookDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hookDelivery
	for _, d := range r.got {
		if d.Event.Event == event {
			out = append(out, d)
		}
	}
	return out
}

func TestWebhooksForOutsideDispatchers(t *testing.T) {
	t.Parallel()
	rcv := newHookReceiver(t)
	w := setup(t, nil, "CALLON_WEBHOOK_URL", rcv.srv.URL+"/callon?token=t0ken", "CALLON_WEBHOOK_SECRET", hookSecret)
	thread := w.team("Ship the webhooks")

	// The first POST gets a 500; the same event comes again and is taken.
	w.dc.WaitFor(t, func() bool {
		ds := rcv.deliveries("session.started")
		return len(ds) == 2 && ds[1].Status == http.StatusOK
	}, "session.started, delivered on its retry")
	started := rcv.deliveries("session.started")
	if string(started[0].Body) != string(started[1].Body) {
		t.Errorf("the retry's body differs:\n%s\n%s", started[0].Body, started[1].Body)
	}
	ev := started[1].Event
	if ev.Session.ThreadID != thread || ev.Data["goal"] != "Ship the webhooks" || ev.Data["owner_id"] != w.dc.UserID() ||
		!strings.HasPrefix(ev.Session.URL, "https://discord.com/channels/") || !strings.HasSuffix(ev.Session.URL, "/"+thread) {
		t.Errorf("session.started = %s, want the thread %s, its goal, owner and jump URL", started[1].Body, thread)
	}
	if ua := started[1].Header.Get("User-Agent"); !strings.HasPrefix(ua, "callon/") {
		t.Errorf("User-Agent = %q, want callon/<version>", ua)
	}
	w.dc.WaitFor(t, func() bool {
		return hasSignal(w.signals(thread), "WEBHOOK", `"status":200`)
	}, "the delivery recorded as a signal")
	sigs := w.signals(thread)
	if !hasSignal(sigs, "WEBHOOK", `"status":500`) || !hasSignal(sigs, "WEBHOOK", `"delivered":false`) {
		t.Errorf("signals %v, want the failed first attempt recorded", sigs)
	}

	if r := w.dissolve(thread, w.dc.UserID(), 0); !strings.Contains(r, "dissolved") {
		t.Fatalf("/dissolve: %+v", r)
	}
	w.dc.WaitFor(t, func() bool { return len(rcv.deliveries("session.dissolved")) == 1 }, "session.dissolved")
	d := rcv.deliveries("session.dissolved")[0]
	if d.Event.Session.ID != ev.Session.ID || d.Event.ID == ev.ID || d.Event.Data["summary"] == "" {
		t.Errorf("session.dissolved = %s, want the same session, a new event id and the summary", d.Body)
	}
}

// A callback goes only where fetch_url may: loopback is refused unless
// CALLON_FETCH_ALLOW lists it; the deployment's endpoint is not bound by
// it (an operator chose it).
func TestCallbacksConnectOnlyWhereFetchMay(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	defer srv.Close()
	ev := master.WebhookEvent{ID: 1, Kind: master.WebhookSessionReported, Body: []byte(`{}`), URL: srv.URL + "/cb"}
	guarded, err := newPoster(config.Config{API: config.API{Secret: apiSecret}, Webhook: config.Webhook{URL: srv.URL, Secret: hookSecret}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := guarded.Post(t.Context(), ev); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("callback to loopback = %+v, %v; want refused", res, err)
	}
	if res, err := guarded.Post(t.Context(), master.WebhookEvent{ID: 2, Body: []byte(`{}`)}); err != nil || res.Status != 200 {
		t.Errorf("the endpoint = %+v, %v; want 200", res, err)
	}
	allowed, err := newPoster(config.Config{API: config.API{Secret: apiSecret}, Tools: config.Tools{FetchAllow: []string{"127.0.0.1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := allowed.Post(t.Context(), ev); err != nil || res.Status != 200 {
		t.Errorf("allowed callback = %+v, %v; want 200", res, err)
	}
	if res, err := allowed.Post(t.Context(), master.WebhookEvent{ID: 3, Body: []byte(`{}`)}); err == nil {
		t.Errorf("an endpoint event with no CALLON_WEBHOOK_URL = %+v; want an error", res)
	}
	if hits.Load() != 2 {
		t.Errorf("the receiver got %d requests, want 2", hits.Load())
	}
}
