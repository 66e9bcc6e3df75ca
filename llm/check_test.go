package llm_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/callonbot/callon/llm"
	"github.com/callonbot/callon/llm/llmtest"
)

var needs = []llm.Need{{Model: "gpt-4o", Setting: "CALLON_MASTER_MODEL"}, {Model: "llama3.1", Setting: "CALLON_WORKER_MODEL"}}

// Check reports each server once and each model, with the setting to fix.
func TestCheck(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, nil, llmtest.WithModels("gpt-4o", "qwen3"))
	r := llm.NewRouter(llm.Config{BaseURL: srv.URL(), APIKey: srv.APIKey()}, nil, slog.New(slog.DiscardHandler))
	got := r.Check(t.Context(), needs)
	if len(got) != 3 {
		t.Fatalf("got %d findings, want the server and two models: %+v", len(got), got)
	}
	if got[0].Err != nil || !strings.Contains(got[0].Subject, srv.URL()) {
		t.Errorf("server finding %+v, want %s answering", got[0], srv.URL())
	}
	if got[1].Err != nil {
		t.Errorf("gpt-4o, which the server lists: %v", got[1].Err)
	}
	if err := got[2].Err; err == nil || !strings.Contains(err.Error(), `does not list "llama3.1"`) ||
		!strings.Contains(err.Error(), "set CALLON_WORKER_MODEL") || !strings.Contains(err.Error(), "gpt-4o, qwen3") ||
		!strings.Contains(err.Error(), "ollama pull llama3.1") {
		t.Errorf("llama3.1, which the server does not list: %v; want the setting, the models it lists and how to pull it", err)
	}
}

// A server that cannot be reached fails the check at once, naming its URL
// and the variable to set; its models are not checked.
func TestCheckUnreachable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/v1"
	l.Close()
	r := llm.NewRouter(llm.Config{BaseURL: url, APIKey: "k"}, nil, slog.New(slog.DiscardHandler))
	got := r.Check(t.Context(), needs)
	if err := got[0].Err; err == nil || !strings.Contains(err.Error(), "cannot reach "+url+": is Ollama") ||
		!strings.Contains(err.Error(), "set OPENAI_BASE_URL") {
		t.Errorf("server finding: %v; want it unreachable, naming %s and OPENAI_BASE_URL", err, url)
	}
	for _, f := range got[1:] {
		if !errors.Is(f.Err, llm.ErrNotChecked) {
			t.Errorf("%s: %v, want ErrNotChecked", f.Subject, f.Err)
		}
	}
}

// A failing server is asked once, never retried; a refused key and a
// URL without the API's version say what to fix.
func TestCheckAsksOnce(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status int
		want   string
	}{
		{http.StatusServiceUnavailable, "answered GET /models with an error: is OPENAI_BASE_URL right?"},
		{http.StatusUnauthorized, "refused the API key: check OPENAI_API_KEY"},
		{http.StatusNotFound, "check OPENAI_BASE_URL, which ends in the API's version, like /v1"},
	} {
		var hits atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.WriteHeader(c.status)
		}))
		r := llm.NewRouter(llm.Config{BaseURL: srv.URL, APIKey: "k", MaxRetries: 4}, nil, slog.New(slog.DiscardHandler))
		got := r.Check(context.Background(), needs[:1])
		srv.Close()
		if err := got[0].Err; err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("HTTP %d: %v; want %q", c.status, err, c.want)
		}
		if n := hits.Load(); n != 1 {
			t.Errorf("HTTP %d: the server was asked %d times, want once", c.status, n)
		}
	}
}
