package llmfake_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/callonbot/callon/llm/llmfake"
)

// A server runs without a test's help: it starts on loopback, answers,
// tells OnUnexpected what it did not expect, and Close stops it.
func TestStartAndClose(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var told []string
	srv, err := llmfake.Start(llmfake.Always(llmfake.Text("hi")), llmfake.WithModels("demo"),
		llmfake.OnUnexpected(func(msg string) { mu.Lock(); told = append(told, msg); mu.Unlock() }))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") {
		t.Errorf("URL %q, want a loopback address", srv.URL())
	}
	get := func(path string) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, strings.TrimSuffix(srv.URL(), "/v1")+path, nil)
		req.Header.Set("Authorization", "Bearer "+srv.APIKey())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if code, err := get("/v1/models"); err != nil || code != http.StatusOK {
		t.Errorf("GET /v1/models: %d, %v", code, err)
	}
	if code, err := get("/v1/nothing"); err != nil || code != http.StatusNotFound {
		t.Errorf("GET /v1/nothing: %d, %v; want 404", code, err)
	}
	mu.Lock()
	if len(told) != 1 || !strings.Contains(told[0], "unexpected request GET /v1/nothing") {
		t.Errorf("OnUnexpected was told %q, want the unknown request", told)
	}
	mu.Unlock()
	srv.Close()
	srv.Close() // a second Close does nothing
	if _, err := get("/v1/models"); err == nil {
		t.Error("the server still answers after Close")
	}
}

// A server that runs for hours keeps no record of what it answered
// (WithoutRecords), and still answers every request.
func TestWithoutRecordsKeepsNone(t *testing.T) {
	t.Parallel()
	srv, err := llmfake.Start(llmfake.Always(llmfake.Text("hi")), llmfake.WithoutRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/chat/completions",
			strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`))
		req.Header.Set("Authorization", "Bearer "+srv.APIKey())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("a chat request: %d, want 200", resp.StatusCode)
		}
	}
	if recs := srv.Requests(); len(recs) != 0 {
		t.Errorf("%d requests recorded, want none", len(recs))
	}
}
