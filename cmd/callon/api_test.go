package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/callonbot/callon/llm/llmtest"
	"github.com/callonbot/callon/webhook"
)

const apiSecret = "api-secret-0123456789"

// apiClient signs requests to callon's API the way docs/api.md shows.
type apiClient struct {
	t    *testing.T
	base string
	n    atomic.Int64
}

// apiResponse is an answer of the API.
type apiResponse struct {
	Status int
	Body   map[string]any
	Raw    string
}

// code is an error answer's code.
func (r apiResponse) code() string {
	if e, ok := r.Body["error"].(map[string]any); ok {
		c, _ := e["code"].(string)
		return c
	}
	return ""
}

// send signs body with secret as sent at at, with id (a fresh one when
// ""), and sends it.
func (c *apiClient) send(method, path string, body any, at time.Time, id, secret string) apiResponse {
	c.t.Helper()
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			c.t.Fatal(err)
		}
	}
	if id == "" {
		id = fmt.Sprintf("msg_%d_%d", time.Now().UnixNano(), c.n.Add(1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(raw))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	webhook.SignAPIRequest(req.Header, secret, id, at, method, path, raw)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Errorf("%s %s: %v", method, path, err)
		return apiResponse{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := apiResponse{Status: resp.StatusCode, Raw: string(b)}
	_ = json.Unmarshal(b, &out.Body)
	return out
}

// do sends a request signed now with a fresh id.
func (c *apiClient) do(method, path string, body any) apiResponse {
	c.t.Helper()
	return c.send(method, path, body, time.Now(), "", apiSecret)
}

// callbackReceiver is a dispatcher's callback endpoint: it verifies
// every delivery with webhook.Verify, with the secret derived for
// callbacks, and keeps it.
type callbackReceiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	got     []map[string]any
	headers []http.Header // of each delivery
	bodies  [][]byte
}

func newCallbackReceiver(t *testing.T) *callbackReceiver {
	r := &callbackReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		id, err := webhook.Verify(webhook.CallbackSecret(apiSecret), req.Header, body, time.Now())
		if err != nil {
			t.Errorf("callback %s does not verify: %v", body, err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ev map[string]any
		if err := json.Unmarshal(body, &ev); err != nil || fmt.Sprint(ev["id"]) != id {
			t.Errorf("callback %s: %v; want its id %s in the body", body, err, id)
		}
		r.mu.Lock()
		r.got = append(r.got, ev)
		r.headers, r.bodies = append(r.headers, req.Header.Clone()), append(r.bodies, body)
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *callbackReceiver) events() []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]map[string]any(nil), r.got...)
}

// setupAPI starts callon with the API on and returns its client.
func setupAPI(t *testing.T, script llmtest.Script, env ...string) (*world, *apiClient) {
	t.Helper()
	addr := freeAddr(t)
	w := setup(t, script, append([]string{"CALLON_HTTP_ADDR", addr, "CALLON_API_SECRET", apiSecret,
		"CALLON_FETCH_ALLOW", "127.0.0.1", "CALLON_API_RATE", "6000"}, env...)...)
	w.dc.WaitFor(t, func() bool { code, _ := get("http://" + addr + "/healthz"); return code == 200 }, "the HTTP endpoint")
	return w, &apiClient{t: t, base: "http://" + addr}
}

// The worked example of docs/api.md, "Several deployments": a dispatcher
// calls POST /v1/dispatch with a callback, the team in #random works,
// and the callback receives its report. Concurrent requests with one
// idempotency key start one team.
func TestAPIDispatchWithCallback(t *testing.T) {
	t.Parallel()
	rcv := newCallbackReceiver(t)
	w, c := setupAPI(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Script(func(r llmtest.Request) llmtest.Reply {
		switch {
		case strings.Contains(r.LastUser(), "Started through callon's API"):
			if !r.HasTool("report_back") {
				return llmtest.Unexpected("report_back not offered to a team with a callback")
			}
			return llmtest.Calls(reportBack("RESULT: the signup endpoint is live"), reply("Done; reported."))
		case strings.Contains(r.LastUser(), "how is it going"):
			return reply("All shipped.")
		}
		return reply("Reported.")
	}))))
	dev := w.dc.ChannelID("random")
	body := map[string]any{"idempotency_key": "job-42", "guild_id": w.dc.GuildID(), "channel": "#random",
		"user_id": w.dc.UserID(), "goal": "Build the signup endpoint", "callback_url": rcv.srv.URL + "/callon"}

	const n = 6
	var wg sync.WaitGroup
	answers := make([]apiResponse, n)
	for i := range n {
		wg.Go(func() { answers[i] = c.do("POST", "/v1/dispatch", body) })
	}
	wg.Wait()
	created, sessionID := 0, 0.0
	for _, a := range answers {
		switch {
		case a.Status == http.StatusCreated:
			created++
			sessionID = a.Body["session_id"].(float64)
		case a.Status == http.StatusOK || (a.Status == http.StatusConflict && a.code() == "in_progress"):
		default:
			t.Errorf("concurrent dispatch: %d %s, want 201, 200 or 409 in_progress", a.Status, a.Raw)
		}
	}
	if created != 1 {
		t.Fatalf("%d requests created a team, want exactly 1: %+v", created, answers)
	}
	for _, a := range answers {
		if a.Status == http.StatusOK && a.Body["session_id"].(float64) != sessionID {
			t.Errorf("a repeated key answered with session %v, want %v", a.Body["session_id"], sessionID)
		}
	}
	if threads := w.dc.Threads(dev); len(threads) != 1 {
		t.Fatalf("got %d threads in #random, want 1", len(threads))
	}
	thread := w.dc.Threads(dev)[0].ID
	// Once it has started, the key answers with the same team.
	again := c.do("POST", "/v1/dispatch", body)
	if again.Status != http.StatusOK || again.Body["session_id"].(float64) != sessionID || again.Body["created"] != false ||
		again.Body["url"] != "https://discord.com/channels/"+w.dc.GuildID()+"/"+thread {
		t.Errorf("the key again: %d %s, want 200 with session %v", again.Status, again.Raw, sessionID)
	}

	w.dc.WaitFor(t, func() bool {
		for _, ev := range rcv.events() {
			if ev["event"] == "session.reported" {
				return true
			}
		}
		return false
	}, "the report at the callback")
	var rep map[string]any
	for _, ev := range rcv.events() {
		if ev["event"] == "session.reported" {
			rep = ev
		}
	}
	data, _ := rep["data"].(map[string]any)
	if data["summary"] != "RESULT: the signup endpoint is live" || data["delivery"] != "callback" ||
		rep["session"].(map[string]any)["id"].(float64) != sessionID {
		t.Errorf("callback event %v, want the team's report", rep)
	}
	for _, ev := range rcv.events() {
		if ev["event"] != "session.reported" {
			t.Errorf("the callback got %v, want only reports", ev["event"])
		}
	}
	w.dc.WaitFor(t, func() bool {
		v := c.do("GET", fmt.Sprintf("/v1/sessions/%d", int64(sessionID)), nil)
		lr, _ := v.Body["last_report"].(map[string]any)
		return v.Status == 200 && lr != nil && lr["summary"] == "RESULT: the signup endpoint is live" && v.Body["state"] == "active"
	}, "GET /v1/sessions/{id} showing the report")
	// The callback's receiver cannot replay the delivery as a request
	// of its own: it was signed with the key derived for callbacks, over
	// the body alone.
	rcv.mu.Lock()
	h, b := rcv.headers[0], rcv.bodies[0]
	rcv.mu.Unlock()
	req, _ := http.NewRequest("GET", c.base+fmt.Sprintf("/v1/sessions/%d", int64(sessionID)), bytes.NewReader(b))
	for _, k := range []string{"webhook-id", "webhook-timestamp", "webhook-signature"} {
		req.Header.Set(k, h.Get(k))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a callback delivery replayed as GET /v1/sessions/{id}: %s, want 401", resp.Status)
	}

	// A message through the API: echoed in the thread, answered there.
	m := c.do("POST", fmt.Sprintf("/v1/sessions/%d/messages", int64(sessionID)),
		map[string]any{"user_id": w.dc.UserID(), "content": "how is it going?"})
	if m.Status != http.StatusAccepted || m.Body["created"] != true {
		t.Fatalf("message: %d %s, want 202", m.Status, m.Raw)
	}
	w.dc.WaitFor(t, func() bool {
		msgs := w.botMessages(thread)
		echo := -1
		for i, msg := range msgs {
			if strings.Contains(msg.Content, "how is it going?") && strings.Contains(msg.Content, "<@"+w.dc.UserID()+">") {
				echo = i
			}
			if echo >= 0 && i > echo && msg.Content == "All shipped." {
				return msg.Reference == nil
			}
		}
		return false
	}, "the API message echoed in the thread, then answered")
	for _, msg := range w.botMessages(thread) {
		if am := msg.AllowedMentions; am == nil || len(am.Parse) != 0 {
			t.Errorf("message %q pings: %+v", msg.Content, am)
		}
	}
}

// A bad signature, an old timestamp and a replay are refused, and start
// nothing.
func TestAPIRefusesForgedStaleAndReplayedRequests(t *testing.T) {
	t.Parallel()
	w, c := setupAPI(t, nil)
	body := map[string]any{"idempotency_key": "k", "guild_id": w.dc.GuildID(), "channel": "#random",
		"user_id": w.dc.UserID(), "goal": "anything"}
	if r := c.send("POST", "/v1/dispatch", body, time.Now(), "", "not-the-secret-at-all"); r.Status != 401 || r.code() != "unauthorized" {
		t.Errorf("bad signature: %d %s, want 401 unauthorized", r.Status, r.Raw)
	}
	if r := c.send("POST", "/v1/dispatch", body, time.Now().Add(-6*time.Minute), "", apiSecret); r.Status != 401 || r.code() != "stale_timestamp" {
		t.Errorf("old timestamp: %d %s, want 401 stale_timestamp", r.Status, r.Raw)
	}
	at := time.Now()
	if r := c.send("GET", "/v1/sessions/999", nil, at, "msg_once", apiSecret); r.Status != 404 || r.code() != "not_found" {
		t.Errorf("GET an unknown session: %d %s, want 404 not_found", r.Status, r.Raw)
	}
	if r := c.send("GET", "/v1/sessions/999", nil, at, "msg_once", apiSecret); r.Status != 409 || r.code() != "replayed" {
		t.Errorf("replay: %d %s, want 409 replayed", r.Status, r.Raw)
	}
	if threads := w.dc.Threads(w.dc.ChannelID("random")); len(threads) != 0 {
		t.Errorf("refused requests opened %d threads", len(threads))
	}
	// The API checks what /callon checks: a user who is not a member.
	body["user_id"] = "123456789012345678"
	if r := c.do("POST", "/v1/dispatch", body); r.Status != 404 || r.code() != "not_found" {
		t.Errorf("a stranger's dispatch: %d %s, want 404 not_found", r.Status, r.Raw)
	}
}
