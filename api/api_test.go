package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/api"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/webhook"
)

const secret = "api-s3cret"

// fakeService is master.API's seam: func fields, and a seen-id set.
type fakeService struct {
	DispatchFunc func(master.DispatchRequest) (master.Session, bool, error)
	MessageFunc  func(int64, master.APIMessage) (master.Turn, bool, error)
	ViewFunc     func(int64) (master.SessionView, error)

	mu   sync.Mutex
	seen map[string]bool
}

func (f *fakeService) Dispatch(_ context.Context, d master.DispatchRequest) (master.Session, bool, error) {
	return f.DispatchFunc(d)
}

func (f *fakeService) Message(_ context.Context, id int64, m master.APIMessage) (master.Turn, bool, error) {
	return f.MessageFunc(id, m)
}

func (f *fakeService) View(_ context.Context, id int64) (master.SessionView, error) {
	return f.ViewFunc(id)
}

func (f *fakeService) Seen(_ context.Context, id string, _ time.Time) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	was := f.seen[id]
	f.seen[id] = true
	return was, nil
}

// now is the handler's clock in these tests.
var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

type env struct {
	t   *testing.T
	svc *fakeService
	h   http.Handler
	n   int
}

func setup(t *testing.T, cfg api.Config) *env {
	t.Helper()
	svc := &fakeService{
		DispatchFunc: func(d master.DispatchRequest) (master.Session, bool, error) {
			return master.Session{ID: 7, GuildID: d.GuildID, ThreadID: "900"}, true, nil
		},
		MessageFunc: func(id int64, m master.APIMessage) (master.Turn, bool, error) {
			return master.Turn{ID: 3, SessionID: id, State: master.TurnQueued}, true, nil
		},
		ViewFunc: func(id int64) (master.SessionView, error) {
			return master.SessionView{Session: master.Session{ID: id, GuildID: "1", ThreadID: "900", State: master.SessionActive}}, nil
		},
	}
	cfg.Secret = secret
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return now }
	}
	return &env{t: t, svc: svc, h: api.New(cfg, svc, slog.New(slog.DiscardHandler))}
}

// do sends a request signed at at with a fresh id (or the given one),
// and returns the response.
func (e *env) do(method, path, body string, at time.Time, id string, sec string) *httptest.ResponseRecorder {
	e.t.Helper()
	if id == "" {
		e.n++
		id = "msg_" + strconv.Itoa(e.n)
	}
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	webhook.SignAPIRequest(r.Header, sec, id, at, method, path, []byte(body))
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}

// errorCode decodes an error response's code.
func errorCode(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var b api.ErrorBody
	if err := json.Unmarshal(w.Body.Bytes(), &b); err != nil || b.Error.Code == "" || b.Error.Message == "" {
		t.Fatalf("error body %s: %v; want {\"error\": {\"code\", \"message\"}}", w.Body, err)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	return b.Error.Code
}

const dispatchJSON = `{"idempotency_key":"k1","guild_id":"1","channel":"#dev","user_id":"2","goal":"ship it","callback_url":"https://x.example/cb"}`

func TestDispatch(t *testing.T) {
	t.Parallel()
	e := setup(t, api.Config{})
	var got master.DispatchRequest
	e.svc.DispatchFunc = func(d master.DispatchRequest) (master.Session, bool, error) {
		got = d
		return master.Session{ID: 7, GuildID: "1", ThreadID: "900"}, true, nil
	}
	w := e.do("POST", "/v1/dispatch", dispatchJSON, now, "", secret)
	if w.Code != http.StatusCreated {
		t.Fatalf("status %d %s, want 201", w.Code, w.Body)
	}
	var resp api.DispatchResponse
	if err := json.Unmarshal(w.Body.Bytes(), &resp); err != nil || !resp.Created || resp.SessionID != 7 || resp.ThreadID != "900" ||
		resp.URL != "https://discord.com/channels/1/900" {
		t.Errorf("response %s, %v", w.Body, err)
	}
	want := master.DispatchRequest{Key: "k1", GuildID: "1", Channel: "#dev", UserID: "2", Goal: "ship it", CallbackURL: "https://x.example/cb"}
	if got.Key != want.Key || got.GuildID != want.GuildID || got.Channel != want.Channel || got.UserID != want.UserID ||
		got.Goal != want.Goal || got.CallbackURL != want.CallbackURL {
		t.Errorf("dispatched %+v, want %+v", got, want)
	}
	// The same key again: the same team, 200.
	e.svc.DispatchFunc = func(master.DispatchRequest) (master.Session, bool, error) {
		return master.Session{ID: 7, GuildID: "1", ThreadID: "900"}, false, nil
	}
	if w := e.do("POST", "/v1/dispatch", dispatchJSON, now, "", secret); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"created":false`) {
		t.Errorf("repeated key: %d %s, want 200 and created false", w.Code, w.Body)
	}
}

// Signatures, timestamps and replays, with the handler's clock injected.
func TestSignedRequestsOnly(t *testing.T) {
	t.Parallel()
	e := setup(t, api.Config{UnsignedBurst: 20})
	cases := []struct {
		name   string
		at     time.Time
		id     string
		secret string
		status int
		code   string
	}{
		{"signed now", now, "first", secret, http.StatusCreated, ""},
		{"the same id again: a replay", now, "first", secret, http.StatusConflict, api.CodeReplayed},
		{"another secret", now, "", "wrong", http.StatusUnauthorized, api.CodeUnauthorized},
		{"signed 6 minutes ago", now.Add(-6 * time.Minute), "", secret, http.StatusUnauthorized, api.CodeStaleTimestamp},
		{"signed 6 minutes ahead", now.Add(6 * time.Minute), "", secret, http.StatusUnauthorized, api.CodeStaleTimestamp},
		{"signed 4 minutes ago", now.Add(-4 * time.Minute), "", secret, http.StatusCreated, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := e.do("POST", "/v1/dispatch", dispatchJSON, c.at, c.id, c.secret)
			if w.Code != c.status || (c.code != "" && errorCode(t, w) != c.code) {
				t.Errorf("%s: %d %s, want %d %s", c.name, w.Code, w.Body, c.status, c.code)
			}
		})
	}
	// A refused signature does not burn the id: the real request passes.
	if w := e.do("POST", "/v1/dispatch", dispatchJSON, now, "third", "wrong"); w.Code != http.StatusUnauthorized {
		t.Fatalf("bad signature: %d", w.Code)
	}
	if w := e.do("POST", "/v1/dispatch", dispatchJSON, now, "third", secret); w.Code != http.StatusCreated {
		t.Errorf("after a bad signature with its id: %d %s, want 201", w.Code, w.Body)
	}
	// No headers at all.
	r := httptest.NewRequest("POST", "/v1/dispatch", strings.NewReader(dispatchJSON))
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized || errorCode(t, w) != api.CodeUnauthorized {
		t.Errorf("unsigned: %d %s", w.Code, w.Body)
	}
	// A body changed after signing.
	r = httptest.NewRequest("POST", "/v1/dispatch", strings.NewReader(strings.Replace(dispatchJSON, "ship it", "leak it", 1)))
	webhook.SignAPIRequest(r.Header, secret, "tampered", now, "POST", "/v1/dispatch", []byte(dispatchJSON))
	w = httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("tampered body: %d %s, want 401", w.Code, w.Body)
	}
}

func TestBodyAndRateBounds(t *testing.T) {
	t.Parallel()
	e := setup(t, api.Config{MaxBody: 1024})
	big := `{"idempotency_key":"k","goal":"` + strings.Repeat("x", 2000) + `"}`
	if w := e.do("POST", "/v1/dispatch", big, now, "", secret); w.Code != http.StatusRequestEntityTooLarge || errorCode(t, w) != api.CodeTooLarge {
		t.Errorf("2 KiB body: %d %s, want 413 too_large", w.Code, w.Body)
	}
	limited := setup(t, api.Config{Rate: 1, Burst: 2})
	var codes []int
	for range 4 {
		codes = append(codes, limited.do("GET", "/v1/sessions/7", "", now, "", secret).Code)
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != http.StatusTooManyRequests || codes[3] != http.StatusTooManyRequests {
		t.Errorf("statuses %v, want two 200s then 429s", codes)
	}
	w := limited.do("GET", "/v1/sessions/7", "", now, "", secret)
	if errorCode(t, w) != api.CodeRateLimited || w.Header().Get("Retry-After") == "" {
		t.Errorf("429: %s, Retry-After %q", w.Body, w.Header().Get("Retry-After"))
	}
}

// Errors of the domain become JSON with a code; internals never show.
func TestErrorsAreJSON(t *testing.T) {
	t.Parallel()
	e := setup(t, api.Config{})
	for _, c := range []struct {
		err    error
		status int
		code   string
	}{
		{master.Errorf(master.EInvalid, "goal is required"), 400, api.CodeInvalid},
		{master.Errorf(master.ENotFound, "no channel"), 404, api.CodeNotFound},
		{&master.Error{Code: master.ENotAllowed, Message: "may not"}, 403, api.CodeForbidden},
		{&master.Error{Code: master.ELimit, Message: "cap"}, 429, api.CodeLimit},
		{&master.Error{Code: master.EConflict, Err: master.ErrInProgress, Message: "in progress"}, 409, api.CodeInProgress},
		{&master.Error{Code: master.EUnavailable, Message: "discord down"}, 503, api.CodeUnavailable},
		{errors.New("pq: secret internals"), 500, api.CodeInternal},
	} {
		e.svc.DispatchFunc = func(master.DispatchRequest) (master.Session, bool, error) { return master.Session{}, false, c.err }
		w := e.do("POST", "/v1/dispatch", dispatchJSON, now, "", secret)
		if w.Code != c.status || errorCode(t, w) != c.code || strings.Contains(w.Body.String(), "internals") {
			t.Errorf("%v: %d %s, want %d %s", c.err, w.Code, w.Body, c.status, c.code)
		}
	}
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/dispatch", `{"goal": 3}`},
		{"POST", "/v1/dispatch", `{"gaol": "typo"}`},
		{"POST", "/v1/dispatch", `not json`},
		{"POST", "/v1/dispatch", ``},
	} {
		if w := e.do(c.method, c.path, c.body, now, "", secret); w.Code != 400 || errorCode(t, w) != api.CodeInvalid {
			t.Errorf("%s %s %q: %d %s, want 400 invalid", c.method, c.path, c.body, w.Code, w.Body)
		}
	}
	if w := e.do("GET", "/v1/sessions/abc", "", now, "", secret); w.Code != 404 || errorCode(t, w) != api.CodeNotFound {
		t.Errorf("GET /v1/sessions/abc: %d %s", w.Code, w.Body)
	}
	if w := e.do("GET", "/v1/nothing", "", now, "", secret); w.Code != 404 || errorCode(t, w) != api.CodeNotFound {
		t.Errorf("GET /v1/nothing: %d %s", w.Code, w.Body)
	}
}

func TestMessageAndSession(t *testing.T) {
	t.Parallel()
	e := setup(t, api.Config{})
	var got master.APIMessage
	e.svc.MessageFunc = func(id int64, m master.APIMessage) (master.Turn, bool, error) {
		got = m
		return master.Turn{ID: 3, SessionID: id, State: master.TurnQueued}, true, nil
	}
	w := e.do("POST", "/v1/sessions/7/messages", `{"user_id":"2","content":"status?"}`, now, "msg_x", secret)
	if w.Code != http.StatusAccepted || !strings.Contains(w.Body.String(), `"turn_id":3`) {
		t.Fatalf("message: %d %s", w.Code, w.Body)
	}
	if got.Key != "msg_x" || got.UserID != "2" || got.Content != "status?" {
		t.Errorf("message %+v: want the webhook-id as its key when it has none", got)
	}
	reported := time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC)
	e.svc.ViewFunc = func(id int64) (master.SessionView, error) {
		return master.SessionView{Session: master.Session{ID: id, GuildID: "1", ChannelID: "5", ThreadID: "900", Goal: "ship it",
			State: master.SessionActive, CallbackURL: "https://secret.example/?token=x"}, OpenTurns: 1, DoneTurns: 2,
			LastReport: &master.ReportView{ID: 4, Summary: "shipped", Delivery: "callback", At: reported}}, nil
	}
	w = e.do("GET", "/v1/sessions/7", "", now, "", secret)
	var s api.SessionJSON
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil || w.Code != 200 || s.ID != 7 || s.State != "active" || !s.Callback ||
		s.Turns.Open != 1 || s.Turns.Done != 2 || s.LastReport == nil || s.LastReport.Summary != "shipped" || s.ReportTo != nil {
		t.Errorf("session: %d %s, %v", w.Code, w.Body, err)
	}
	if bytes.Contains(w.Body.Bytes(), []byte("secret.example")) {
		t.Errorf("the callback URL shows: %s", w.Body)
	}
}

// countingMetrics records APIRequest calls.
type countingMetrics struct {
	mu  sync.Mutex
	got []string
}

func (m *countingMetrics) APIRequest(endpoint, code string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got = append(m.got, endpoint+" "+code)
}

func TestRequestsAreCounted(t *testing.T) {
	t.Parallel()
	m := &countingMetrics{}
	e := setup(t, api.Config{Metrics: m})
	e.do("POST", "/v1/dispatch", dispatchJSON, now, "", secret)
	e.do("GET", "/v1/sessions/7", "", now, "", "wrong")
	e.do("GET", "/v1/elsewhere", "", now, "", secret)
	want := []string{"dispatch ok", "session unauthorized", "other not_found"}
	if strings.Join(m.got, ",") != strings.Join(want, ",") {
		t.Errorf("counted %v, want %v", m.got, want)
	}
}

// Who the caller is is checked before they are counted: however many
// unsigned or forged requests come first, a signed request is taken;
// those requests use up only their own address's small bucket (then
// 429), never the signed caller's, nor another address's. (The rate used
// to be spent before the signature was checked: 40 unsigned requests and
// a signed one got 429.)
func TestUnsignedRequestsCannotStarveSignedOnes(t *testing.T) {
	t.Parallel()
	e := setup(t, api.Config{Rate: 1, Burst: 2, UnsignedRate: 1, UnsignedBurst: 3})
	send := func(r *http.Request, addr string) int {
		r.RemoteAddr = addr + ":4242"
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		return w.Code
	}
	var codes []int
	for i := range 40 {
		r := httptest.NewRequest("GET", "/v1/sessions/7", nil)
		if i%2 == 1 { // forged: signed with another secret
			webhook.SignAPIRequest(r.Header, "wrong", "forged-"+strconv.Itoa(i), now, "GET", "/v1/sessions/7", nil)
		}
		codes = append(codes, send(r, "203.0.113.9"))
	}
	if codes[0] != 401 || codes[2] != 401 || codes[3] != 429 || codes[39] != 429 {
		t.Errorf("unsigned statuses %v: want 401 for the address's first three, then 429", codes)
	}
	for i := range 2 {
		r := httptest.NewRequest("GET", "/v1/sessions/7", nil)
		webhook.SignAPIRequest(r.Header, secret, "signed-"+strconv.Itoa(i), now, "GET", "/v1/sessions/7", nil)
		if code := send(r, "203.0.113.9"); code != http.StatusOK {
			t.Errorf("signed request %d from the flooding address: %d, want 200", i, code)
		}
	}
	if code := send(httptest.NewRequest("GET", "/v1/sessions/7", nil), "198.51.100.1"); code != 401 {
		t.Errorf("another address's first unsigned request: %d, want 401", code)
	}
	// The signed caller's own rate still holds.
	r := httptest.NewRequest("GET", "/v1/sessions/7", nil)
	webhook.SignAPIRequest(r.Header, secret, "signed-3", now, "GET", "/v1/sessions/7", nil)
	if code := send(r, "192.0.2.1"); code != http.StatusTooManyRequests {
		t.Errorf("the caller's third request at a burst of 2: %d, want 429", code)
	}
}

// A signature covers the method and the path: a signed request replayed
// to another endpoint, another session or as another method is refused,
// as is a signature over the body alone (a webhook's), and so is a
// callback callon delivered (signed with the key derived for callbacks),
// replayed as a request.
func TestSignatureCoversMethodAndPath(t *testing.T) {
	t.Parallel()
	e := setup(t, api.Config{})
	body := `{"user_id":"2","content":"hi"}`
	signed := httptest.NewRequest("POST", "/v1/sessions/7/messages", nil)
	webhook.SignAPIRequest(signed.Header, secret, "m1", now, "POST", "/v1/sessions/7/messages", []byte(body))
	replay := func(method, path string, h http.Header, b string) int {
		r := httptest.NewRequest(method, path, strings.NewReader(b))
		r.Header = h.Clone()
		w := httptest.NewRecorder()
		e.h.ServeHTTP(w, r)
		return w.Code
	}
	if code := replay("POST", "/v1/sessions/8/messages", signed.Header, body); code != 401 {
		t.Errorf("replayed to another session: %d, want 401", code)
	}
	if code := replay("GET", "/v1/sessions/7", signed.Header, body); code != 401 {
		t.Errorf("replayed as a GET: %d, want 401", code)
	}
	bodyOnly := http.Header{}
	webhook.SignRequest(bodyOnly, secret, "b1", now, []byte(body))
	if code := replay("POST", "/v1/sessions/7/messages", bodyOnly, body); code != 401 {
		t.Errorf("a signature over the body alone: %d, want 401", code)
	}
	callback := http.Header{}
	event := []byte(`{"type":"session.reported","data":{"summary":"done"}}`)
	webhook.SignRequest(callback, webhook.CallbackSecret(secret), "77", now, event)
	if code := replay("GET", "/v1/sessions/7", callback, string(event)); code != 401 {
		t.Errorf("a callback's delivery replayed as GET /v1/sessions/7: %d, want 401", code)
	}
	if code := replay("POST", "/v1/sessions/7/messages", signed.Header, body); code != http.StatusAccepted {
		t.Errorf("the request as signed: %d, want 202", code)
	}
	if webhook.CallbackSecret(secret) == secret || !strings.HasPrefix(webhook.CallbackSecret(secret), "whsec_") {
		t.Error("the callback secret is not derived")
	}
}
