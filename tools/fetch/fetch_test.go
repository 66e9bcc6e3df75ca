package fetch_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/callonbot/callon/tools/fetch"
)

// setup serves mux on 127.0.0.1 and returns its URL.
func setup(tb testing.TB, mux *http.ServeMux) string {
	tb.Helper()
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return srv.URL
}

func newFetcher(tb testing.TB, opts fetch.Options) *fetch.Fetcher {
	tb.Helper()
	f, err := fetch.New(opts)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(f.Close)
	return f
}

func TestFetchAllowed(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<html><head><title>The  page</title><script>var x = 1;</script></head>
<body><nav><a href="/">Home</a></nav><h1>Hello</h1><p>First <a href="/x">linked</a> paragraph.</p></body></html>`)
	})
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/page", http.StatusFound)
	})
	mux.HandleFunc("/data.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"a": [1, 2]}`)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("x", 5000))
	})
	mux.HandleFunc("/image", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\nxxxx"))
	})
	mux.HandleFunc("/missing", http.NotFound)
	base := setup(t, mux)
	f := newFetcher(t, fetch.Options{Allow: []string{"127.0.0.0/8"}, MaxBody: 1000})

	tests := []struct {
		path       string
		wantURL    string
		wantStatus int
		wantType   string
		wantText   string
		wantIsText bool
		wantTrunc  bool
	}{
		{"/old", "/page", 200, "text/html", "# The page\n\n# Hello\n\nFirst linked paragraph.", true, false},
		{"/data.json", "/data.json", 200, "application/json", `{"a": [1, 2]}`, true, false},
		{"/big", "/big", 200, "text/plain", strings.Repeat("x", 1000), true, true},
		{"/image", "/image", 200, "image/png", "", false, false},
		{"/missing", "/missing", 404, "text/plain", "404 page not found\n", true, false},
	}
	for _, tc := range tests {
		p, err := f.Fetch(t.Context(), base+tc.path)
		if err != nil {
			t.Errorf("%s: Fetch: %v", tc.path, err)
			continue
		}
		if p.URL != base+tc.wantURL || p.StatusCode != tc.wantStatus || p.ContentType != tc.wantType {
			t.Errorf("%s: got URL %s status %d type %s, want %s %d %s", tc.path, p.URL, p.StatusCode, p.ContentType, base+tc.wantURL, tc.wantStatus, tc.wantType)
		}
		if p.Text != tc.wantText || p.IsText != tc.wantIsText || p.Truncated != tc.wantTrunc {
			t.Errorf("%s: got text %q (text %v, truncated %v), want %q (%v, %v)", tc.path, p.Text, p.IsText, p.Truncated, tc.wantText, tc.wantIsText, tc.wantTrunc)
		}
	}
}

func TestFetchRefused(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "secret")
	})
	mux.HandleFunc("/to", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
	})
	base := setup(t, mux)
	port := strings.TrimPrefix(base, "http://127.0.0.1:")
	open := newFetcher(t, fetch.Options{})
	allowOne := newFetcher(t, fetch.Options{Allow: []string{"127.0.0.1"}})

	tests := []struct {
		name string
		f    *fetch.Fetcher
		url  string
		want string
	}{
		{"loopback", open, base + "/", "127.0.0.1 is a loopback address"},
		{"localhost resolves to loopback", open, "http://localhost:" + port + "/", "localhost resolves to"},
		{"ipv6 loopback", open, "http://[::1]:" + port + "/", "::1 is a loopback address"},
		{"mapped loopback", open, "http://[::ffff:127.0.0.1]:" + port + "/", "loopback"},
		{"metadata name", open, "http://metadata.google.internal/computeMetadata/v1/", "cloud metadata host"},
		{"redirect to other loopback", allowOne, base + "/to?u=http://127.0.0.2:" + port + "/", "127.0.0.2 is a loopback address"},
		{"redirect to private", allowOne, base + "/to?u=http://10.1.2.3/", "10.1.2.3 is a private address"},
		{"redirect to metadata", allowOne, base + "/to?u=http://169.254.169.254/latest/", "cloud metadata"},
		{"redirect to ipv6 loopback", allowOne, base + "/to?u=http://[::1]:" + port + "/", "::1 is a loopback address"},
		{"redirect to file", allowOne, base + "/to?u=file:///etc/passwd", "redirect to a file"},
		{"scheme", allowOne, "ftp://127.0.0.1/", "only http:// and https://"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.f.Fetch(t.Context(), tc.url)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server's secret was fetched %d times, want 0", n)
	}
	var blocked *fetch.BlockedError
	if _, err := open.Fetch(t.Context(), base+"/"); !errors.As(err, &blocked) || blocked.Reason != "loopback" {
		t.Errorf("got %v, want a *BlockedError for loopback", err)
	}
}

func TestFetchAllowByHost(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "hello") })
	base := setup(t, mux)
	f := newFetcher(t, fetch.Options{Allow: []string{"LOCALHOST."}})
	p, err := f.Fetch(t.Context(), strings.Replace(base, "127.0.0.1", "localhost", 1)+"/")
	if err != nil || p.Text != "hello" {
		t.Fatalf("got %+v, %v; want hello from an allowed host name", p, err)
	}
}

func TestFetchLimits(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/loop/{n}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop/"+r.PathValue("n")+"x", http.StatusFound)
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	})
	base := setup(t, mux)
	f := newFetcher(t, fetch.Options{Allow: []string{"127.0.0.1/32"}, Timeout: 200 * time.Millisecond})
	for _, tc := range []struct{ path, want string }{
		{"/loop/x", "stopped after 5 redirects"},
		{"/hang", "timed out after 200ms"},
	} {
		if _, err := f.Fetch(t.Context(), base+tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.path, err, tc.want)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := f.Fetch(ctx, base+"/hang"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
}

func TestAllowListErrors(t *testing.T) {
	t.Parallel()
	for _, entry := range []string{"10.0.0.0/33", "a b", "host:80"} {
		if _, err := fetch.New(fetch.Options{Allow: []string{entry}}); err == nil || !strings.Contains(err.Error(), entry) {
			t.Errorf("allow %q: got %v, want an error naming it", entry, err)
		}
	}
}
