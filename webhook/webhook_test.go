package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/webhook"
)

const secret = "s3cret-key"

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
	status, err := webhook.New(srv.URL, secret, "callon/1.0", nil).Post(t.Context(),
		master.WebhookEvent{ID: 42, Kind: master.WebhookSessionDissolved, Body: body})
	if err != nil || status != http.StatusAccepted {
		t.Fatalf("Post = %d, %v; want 202", status, err)
	}
	r := <-reqs
	if string(r.body) != string(body) {
		t.Errorf("body %s, want %s byte for byte", r.body, body)
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	for k, v := range map[string]string{
		"X-Callon-Signature": want, "X-Callon-Event": "session.dissolved", "X-Callon-Delivery": strconv.Itoa(42),
		"Content-Type": "application/json", "User-Agent": "callon/1.0",
	} {
		if r.header.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, r.header.Get(k), v)
		}
	}
	if webhook.Sign(secret, body) != want || !webhook.Verify(secret, body, want) ||
		webhook.Verify("other", body, want) || webhook.Verify(secret, append(body, ' '), want) {
		t.Error("Sign and Verify disagree with the HMAC")
	}
}

func TestPostErrorsDoNotShowTheURL(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there now
	p := webhook.New(url+"/hook?token=t0ken", secret, "callon/test", nil)
	status, err := p.Post(t.Context(), master.WebhookEvent{ID: 1, Kind: master.WebhookSessionStarted, Body: []byte(`{}`)})
	if err == nil || status != 0 {
		t.Fatalf("Post to a closed port = %d, %v; want an error", status, err)
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
	status, err := webhook.New(moved.URL, secret, "callon/test", nil).Post(t.Context(), master.WebhookEvent{ID: 1, Body: []byte(`{}`)})
	if err != nil || status != http.StatusTemporaryRedirect {
		t.Errorf("Post = %d, %v; want the 307 itself", status, err)
	}
}
