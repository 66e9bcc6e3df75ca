package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/webhook"
)

const secret = "s3cret-key"

// at is the clock of these tests.
var at = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestPostSigns(t *testing.T) {
	t.Parallel()
	type got struct {
		header http.Header
		body   []byte
	}
	reqs := make(chan got, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		reqs <- got{r.Header.Clone(), body}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	body := []byte(`{"id": 42, "event": "session.dissolved", "data": {"summary": "bye"}}`)
	res, err := webhook.New(srv.URL, secret, "callon/1.0", nil).WithClock(func() time.Time { return at }).Post(t.Context(),
		master.WebhookEvent{ID: 42, Kind: master.WebhookSessionDissolved, Body: body})
	if err != nil || res.Status != http.StatusAccepted {
		t.Fatalf("Post = %+v, %v; want 202", res, err)
	}
	r := <-reqs
	if string(r.body) != string(body) {
		t.Errorf("body %s, want %s byte for byte", r.body, body)
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	legacy := "sha256=" + hex.EncodeToString(m.Sum(nil))
	// Standard Webhooks: HMAC-SHA256 of "id.timestamp.body", base64.
	ts := strconv.FormatInt(at.Unix(), 10)
	m = hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("42." + ts + "." + string(body)))
	v1 := "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
	for k, v := range map[string]string{
		"X-Callon-Signature": legacy, "X-Callon-Event": "session.dissolved", "X-Callon-Delivery": "42",
		"webhook-id": "42", "webhook-timestamp": ts, "webhook-signature": v1,
		"Content-Type": "application/json", "User-Agent": "callon/1.0",
	} {
		if r.header.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, r.header.Get(k), v)
		}
	}
	if webhook.Sign(secret, body) != legacy || !webhook.VerifyLegacy(secret, body, legacy) ||
		webhook.VerifyLegacy("other", body, legacy) || webhook.VerifyLegacy(secret, append(body, ' '), legacy) {
		t.Error("Sign and VerifyLegacy disagree with the HMAC")
	}
	if id, err := webhook.Verify(secret, r.header, r.body, at.Add(time.Minute)); err != nil || id != "42" {
		t.Errorf("Verify = %q, %v; want 42", id, err)
	}
}

// A receiver checks the id, the timestamp and the signature with Verify.
func TestVerify(t *testing.T) {
	t.Parallel()
	body := []byte(`{"id":7}`)
	signed := func(mod func(h http.Header)) http.Header {
		h := http.Header{}
		webhook.SignRequest(h, secret, "msg_7", at, body)
		if mod != nil {
			mod(h)
		}
		return h
	}
	other := http.Header{}
	webhook.SignRequest(other, "another-secret", "msg_7", at, body)
	cases := []struct {
		name string
		h    http.Header
		body []byte
		now  time.Time
		want error
	}{
		{"as signed", signed(nil), body, at, nil},
		{"4 minutes later", signed(nil), body, at.Add(4 * time.Minute), nil},
		{"clock 4 minutes behind", signed(nil), body, at.Add(-4 * time.Minute), nil},
		{"6 minutes later", signed(nil), body, at.Add(6 * time.Minute), webhook.ErrTimestamp},
		{"from the future", signed(nil), body, at.Add(-6 * time.Minute), webhook.ErrTimestamp},
		{"another body", signed(nil), []byte(`{"id":8}`), at, webhook.ErrSignature},
		{"another id", signed(func(h http.Header) { h.Set("webhook-id", "msg_8") }), body, at, webhook.ErrSignature},
		{"another timestamp", signed(func(h http.Header) { h.Set("webhook-timestamp", strconv.FormatInt(at.Unix()+1, 10)) }), body, at, webhook.ErrSignature},
		{"another secret", other, body, at, webhook.ErrSignature},
		{"no signature", signed(func(h http.Header) { h.Del("webhook-signature") }), body, at, webhook.ErrMissingHeaders},
		{"no id", signed(func(h http.Header) { h.Del("webhook-id") }), body, at, webhook.ErrMissingHeaders},
		{"garbled timestamp", signed(func(h http.Header) { h.Set("webhook-timestamp", "soon") }), body, at, webhook.ErrTimestamp},
		{"one of several signatures", signed(func(h http.Header) {
			h.Set("webhook-signature", other.Get("webhook-signature")+" "+h.Get("webhook-signature"))
		}), body, at, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, err := webhook.Verify(secret, c.h, c.body, c.now)
			if !errors.Is(err, c.want) || (err == nil && id != "msg_7") {
				t.Errorf("%s: Verify = %q, %v; want %v", c.name, id, err, c.want)
			}
		})
	}
}

// The test vector of docs/api.md, computed with openssl as it shows.
func TestREADMEVector(t *testing.T) {
	t.Parallel()
	if got := webhook.SignV1("api-secret-0123456789", "msg_1", 1700000000, []byte(`{"a":1}`)); got != "v1,O+uwObbqd6BgudSvBkahfpGxCb4kd/ClD1UynduwRpo=" {
		t.Errorf("SignV1 = %s, want the vector of docs/api.md", got)
	}
}

// A secret in the Standard Webhooks form ("whsec_" and base64) keys the
// HMAC with its decoded bytes, as the Standard Webhooks libraries do.
func TestWhsecSecretIsDecoded(t *testing.T) {
	t.Parallel()
	raw := []byte("0123456789abcdef0123456789abcdef")
	sec := "whsec_" + base64.StdEncoding.EncodeToString(raw)
	m := hmac.New(sha256.New, raw)
	m.Write([]byte("id1.100.{}"))
	if got, want := webhook.SignV1(sec, "id1", 100, []byte("{}")), "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)); got != want {
		t.Errorf("SignV1 = %s, want %s", got, want)
	}
}

func TestPostReturnsRetryAfter(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		header string
		want   time.Duration
	}{
		{"120", 2 * time.Minute},
		{at.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"", 0},
		{"soon", 0},
		{"-5", 0},
		{at.Add(-time.Minute).Format(http.TimeFormat), 0},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c.header != "" {
				w.Header().Set("Retry-After", c.header)
			}
			w.WriteHeader(http.StatusTooManyRequests)
		}))
		res, err := webhook.New(srv.URL, secret, "callon/test", nil).WithClock(func() time.Time { return at }).Post(t.Context(),
			master.WebhookEvent{ID: 1, Body: []byte(`{}`)})
		srv.Close()
		if err != nil || res.Status != http.StatusTooManyRequests || res.RetryAfter != c.want {
			t.Errorf("Retry-After %q: Post = %+v, %v; want 429 and %v", c.header, res, err, c.want)
		}
	}
}

func TestPostToAnEventsOwnURL(t *testing.T) {
	t.Parallel()
	endpoint := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("an event with a URL of its own went to the endpoint")
	}))
	defer endpoint.Close()
	got := make(chan string, 1)
	callback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.URL.Path
	}))
	defer callback.Close()
	res, err := webhook.New(endpoint.URL, secret, "callon/test", nil).Post(t.Context(),
		master.WebhookEvent{ID: 1, Body: []byte(`{}`), URL: callback.URL + "/done"})
	if err != nil || res.Status != http.StatusOK || <-got != "/done" {
		t.Errorf("Post = %+v, %v; want 200 from the callback", res, err)
	}
}

func TestPostErrorsDoNotShowTheURL(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	p := webhook.New(url+"/hook?token=t0ken", secret, "callon/test", nil)
	res, err := p.Post(t.Context(), master.WebhookEvent{ID: 1, Kind: master.WebhookSessionStarted, Body: []byte(`{}`)})
	if err == nil || res.Status != 0 {
		t.Fatalf("Post to a closed port = %+v, %v; want an error", res, err)
	}
	if strings.Contains(err.Error(), "t0ken") || strings.Contains(err.Error(), "/hook") {
		t.Errorf("error %q shows the URL", err)
	}
}

func TestPostDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("the redirect was followed")
	}))
	defer target.Close()
	moved := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer moved.Close()
	res, err := webhook.New(moved.URL, secret, "callon/test", nil).Post(t.Context(), master.WebhookEvent{ID: 1, Body: []byte(`{}`)})
	if err != nil || res.Status != http.StatusTemporaryRedirect {
		t.Errorf("Post = %+v, %v; want the 307 itself", res, err)
	}
}

// The vectors of docs/api.md: a request to the API signed over its
// method and path, and the callback secret with a callback's signature.
func TestAPIAndCallbackVectors(t *testing.T) {
	t.Parallel()
	const secret = "api-secret-0123456789"
	h := http.Header{}
	webhook.SignAPIRequest(h, secret, "msg_1", time.Unix(1700000000, 0), "POST", "/v1/dispatch", []byte(`{"a":1}`))
	if got := h.Get(webhook.HeaderStdSignature); got != "v1,HP7qGO1jyVpXU3agCBUgljE6wow9XPNp+VcL/7bZZzA=" {
		t.Errorf("API signature %s, want the vector of docs/api.md", got)
	}
	if _, err := webhook.VerifyAPIRequest(secret, "POST", "/v1/dispatch", h, []byte(`{"a":1}`), time.Unix(1700000000, 0)); err != nil {
		t.Errorf("VerifyAPIRequest: %v", err)
	}
	cb := webhook.CallbackSecret(secret)
	if cb != "whsec_IRs1LDHg0QjDwQeTGHalaDWO19HUw7wOL3yB2eAOl+8=" {
		t.Errorf("CallbackSecret = %s, want the vector of docs/api.md", cb)
	}
	if got := webhook.SignV1(cb, "msg_1", 1700000000, []byte(`{"a":1}`)); got != "v1,feZ3yo9pKhI7HTTCo8iUjgXYJpNGsE951nuP5JMrDE8=" {
		t.Errorf("callback signature %s, want the vector of docs/api.md", got)
	}
}
