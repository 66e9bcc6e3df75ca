package bot

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/callonbot/callon/master"
)

func TestDownloaderFetchesOnlyFromTheCDN(t *testing.T) {
	t.Parallel()
	var offCDN atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		offCDN.Add(1)
		w.Write([]byte("secret"))
	}))
	t.Cleanup(other.Close)
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/cdn/ok.txt":
			w.Header().Set("Content-Type", "text/plain")
			w.Write([]byte("hello"))
		case "/cdn/big.txt":
			w.Write([]byte(strings.Repeat("x", 100)))
		case "/cdn/chunked.txt": // no Content-Length: the body itself is bounded
			w.(http.Flusher).Flush()
			w.Write([]byte(strings.Repeat("x", 100)))
		case "/cdn/away.txt":
			http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
		case "/cdn/moved.txt":
			http.Redirect(w, r, "/cdn/ok.txt", http.StatusFound)
		case "/cdn/outside.txt":
			http.Redirect(w, r, "/elsewhere/ok.txt", http.StatusFound)
		case "/cdn/boom.txt":
			http.Error(w, "boom", http.StatusBadGateway)
		default:
			http.Error(w, "This content is no longer available.", http.StatusNotFound)
		}
	}))
	t.Cleanup(cdn.Close)
	d := NewDownloader([]string{cdn.URL + "/cdn"})
	tests := []struct {
		path    string
		want    string
		wantErr error
		anyErr  bool
	}{
		{path: cdn.URL + "/cdn/ok.txt?ex=1&hm=SIGNATURE&", want: "hello"},
		{path: cdn.URL + "/cdn/moved.txt", want: "hello"},
		{path: cdn.URL + "/cdn/big.txt", wantErr: master.ErrTooLarge},
		{path: cdn.URL + "/cdn/chunked.txt", wantErr: master.ErrTooLarge},
		{path: cdn.URL + "/cdn/away.txt", wantErr: master.ErrNotOnCDN},
		{path: cdn.URL + "/cdn/outside.txt", wantErr: master.ErrNotOnCDN},
		{path: other.URL + "/cdn/ok.txt", wantErr: master.ErrNotOnCDN},
		{path: cdn.URL + "/elsewhere/ok.txt", wantErr: master.ErrNotOnCDN},
		{path: cdn.URL + "/cdn/missing.txt?hm=SIGNATURE", wantErr: master.ErrGone},
		{path: cdn.URL + "/cdn/boom.txt?hm=SIGNATURE", anyErr: true},
	}
	for _, tt := range tests {
		data, ct, err := d.Download(t.Context(), tt.path, 50)
		switch {
		case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
			t.Errorf("Download(%s) = %q, %v; want %v", tt.path, data, err, tt.wantErr)
		case tt.anyErr && (err == nil || errors.Is(err, master.ErrGone) || errors.Is(err, master.ErrTooLarge)):
			t.Errorf("Download(%s): %v, want an error that may pass", tt.path, err)
		case tt.wantErr == nil && !tt.anyErr && (err != nil || string(data) != tt.want || ct != "text/plain"):
			t.Errorf("Download(%s) = %q, %q, %v; want %q", tt.path, data, ct, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "SIGNATURE") {
			t.Errorf("an error carries the URL's signature: %v", err)
		}
	}
	if n := offCDN.Load(); n != 0 {
		t.Errorf("the server off the CDN got %d requests, want none", n)
	}
}
