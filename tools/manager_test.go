package tools_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/tools"
	"github.com/callonbot/callon/tools/fetch"
	"github.com/callonbot/callon/tools/mcptest"
)

var allTestTools = []string{"test__add", "test__big", "test__counter", "test__echo", "test__environ", "test__fail", "test__image", "test__slow"}

func TestStdioServer(t *testing.T) {
	t.Parallel()
	m := setup(t, []tools.Server{stdioServer("test", nil)}, tools.Options{}, nil)

	o := offer(t, m, "fetch_url", "test.*")
	if got, want := toolNames(o), append([]string{"fetch_url"}, allTestTools...); !slices.Equal(got, want) {
		t.Fatalf("got tools %q, want %q", got, want)
	}
	echo := o.Tools[slices.Index(toolNames(o), "test__echo")]
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(echo.Parameters, &schema); err != nil || schema.Type != "object" || schema.Properties["text"] == nil {
		t.Errorf("got echo schema %s (%v), want an object with a text property", echo.Parameters, err)
	}
	if echo.Description != "Returns its text." {
		t.Errorf("got echo description %q, want the server's", echo.Description)
	}

	tests := []struct {
		name, args string
		want       string
		wantErr    bool
	}{
		{"test__echo", `{"text": "héllo"}`, "héllo", false},
		{"test__add", `{"a": 2, "b": 3.5}`, "5.5", false},
		{"test__fail", ``, mcptest.FailMessage, true},
		{"test__image", `{}`, "a picture:\n[image: image/png, 2 KiB]", false},
		{"test__echo", `[1]`, "test__echo: the arguments must be a JSON object", true},
		{"test__echo", `{"text": 1}`, "text", true},
		{"test__nope", `{}`, "nope", true},
		{"other__echo", `{}`, `unknown tool "other__echo"`, true},
		{"echo", `{}`, `unknown tool "echo"`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := m.Call(t.Context(), "", tc.name, string(tc.args))
			if r.IsError != tc.wantErr || !strings.Contains(r.Text, tc.want) {
				t.Errorf("Call(%s, %s) = %q (error %v), want %q (error %v)", tc.name, tc.args, r.Text, r.IsError, tc.want, tc.wantErr)
			}
			if !tc.wantErr && (r.Size != len(r.Text) || r.Duration <= 0) {
				t.Errorf("Call(%s): got size %d duration %s, want %d and a duration", tc.name, r.Size, r.Duration, len(r.Text))
			}
		})
	}
}

func TestStdioEnvironment(t *testing.T) {
	t.Parallel()
	env := map[string]string{"API_KEY": "k", "PATH": "/opt/bin"}
	m := setup(t, []tools.Server{
		stdioServer("minimal", nil),
		stdioServer("own", env),
	}, tools.Options{}, nil)
	based := setup(t, []tools.Server{{Name: "base", Command: []string{serverBin}, Env: map[string]string{"A": "1"}}},
		tools.Options{BaseEnv: []string{"LANG=C.UTF-8", "A=0"}}, nil)
	tests := []struct {
		m    *tools.Manager
		name string
		want string
	}{
		{m, "minimal__environ", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		{m, "own__environ", "API_KEY=k\nPATH=/opt/bin"},
		{based, "base__environ", "LANG=C.UTF-8\nA=1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if r := tc.m.Call(t.Context(), "", tc.name, ""); r.Text != tc.want {
				t.Errorf("%s: got %q, want %q", tc.name, r.Text, tc.want)
			}
		})
	}
}

func TestAllowedTools(t *testing.T) {
	t.Parallel()
	m := setup(t, []tools.Server{stdioServer("test", nil)}, tools.Options{}, nil)
	tests := []struct {
		allowed     []string
		want        []string
		wantMissing []string
	}{
		{[]string{"test.echo"}, []string{"test__echo"}, nil},
		{[]string{"test.*"}, allTestTools, nil},
		{[]string{"test.slow", "fetch_url", "test.echo", "test.slow"}, []string{"test__slow", "fetch_url", "test__echo"}, nil},
		{[]string{"test.echo", "test.nope"}, []string{"test__echo"}, []string{"test.nope"}},
		{[]string{"fetch_url"}, []string{"fetch_url"}, nil},
		{nil, nil, nil},
	}
	for _, tc := range tests {
		o := offer(t, m, tc.allowed...)
		if got := toolNames(o); !slices.Equal(got, tc.want) || !slices.Equal(o.Missing, tc.wantMissing) {
			t.Errorf("Tools(%q) = %q missing %q, want %q missing %q", tc.allowed, got, o.Missing, tc.want, tc.wantMissing)
		}
	}

	for _, bad := range [][]string{{"other.echo"}, {"echo"}, {"test."}} {
		if _, err := m.Tools(t.Context(), "", bad); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("Tools(%q): got %v, want an error naming the entry", bad, err)
		}
		if err := m.Check("", bad); err == nil {
			t.Errorf("Check(%q): got nil, want an error", bad)
		}
	}
	if err := m.Check("", []string{"fetch_url", "test.*", "test.echo"}); err != nil {
		t.Errorf("Check: %v", err)
	}
}

func TestAllows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		allowed []string
		name    string
		want    bool
	}{
		{[]string{"fetch_url"}, "fetch_url", true},
		{[]string{"test.echo"}, "fetch_url", false},
		{[]string{"test.echo"}, "test__echo", true},
		{[]string{"test.echo"}, "test__fail", false},
		{[]string{"test.*"}, "test__fail", true},
		{[]string{"test.*"}, "test__", false},
		{[]string{"test.*"}, "tester__fail", false},
		{[]string{"te.*"}, "test__fail", false},
		{nil, "test__echo", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tools.Allows(tc.allowed, tc.name); got != tc.want {
				t.Errorf("Allows(%q, %q) = %v, want %v", tc.allowed, tc.name, got, tc.want)
			}
		})
	}
}

func TestApproval(t *testing.T) {
	t.Parallel()
	m := setup(t, []tools.Server{
		{Name: "all", Command: []string{"x"}, ApproveAll: true},
		{Name: "some", Command: []string{"x"}, ApproveTools: []string{"write"}},
		{Name: "none", Command: []string{"x"}},
	}, tools.Options{}, nil)
	tests := []struct {
		name string
		want bool
	}{
		{"all__read", true}, {"some__write", true}, {"some__read", false}, {"none__write", false},
		{"fetch_url", false}, {"other__write", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.NeedsApproval([]string{"all.*", "some.*", "none.*", "fetch_url"}, tc.name, `{"url":"https://example.com"}`); got != tc.want {
				t.Errorf("Approval(%q) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}

func TestStreamableHTTP(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(mcptest.Handler(mcptest.Options{Header: "X-Api-Key", Value: "s3cret"}))
	t.Cleanup(srv.Close)
	m := setup(t, []tools.Server{
		{Name: "web", URL: srv.URL, Headers: map[string]string{"X-Api-Key": "s3cret"}},
		{Name: "nokey", URL: srv.URL},
	}, tools.Options{}, nil)

	o := offer(t, m, "web.echo", "web.add", "nokey.echo")
	if got, want := toolNames(o), []string{"web__echo", "web__add"}; !slices.Equal(got, want) {
		t.Errorf("got tools %q, want %q", got, want)
	}
	if len(o.Unavailable) != 1 || o.Unavailable[0].Server != "nokey" || !strings.Contains(o.Unavailable[0].Reason, "Unauthorized") {
		t.Errorf("got unavailable %+v, want nokey, refused without its header", o.Unavailable)
	}
	if r := m.Call(t.Context(), "", "web__add", `{"a": 1, "b": 2}`); r.IsError || r.Text != "3" {
		t.Errorf("web__add: got %+v, want 3", r)
	}
	if r := m.Call(t.Context(), "", "nokey__echo", `{"text": "x"}`); !r.IsError || !strings.Contains(r.Text, "unavailable") {
		t.Errorf("nokey__echo: got %+v, want an error saying the server is unavailable", r)
	}
}

func TestServerThatCannotStart(t *testing.T) {
	t.Parallel()
	logs := &logRecorder{}
	m := setup(t, []tools.Server{
		{Name: "gone", Command: []string{filepath.Join(t.TempDir(), "no-such-server")}},
	}, tools.Options{RestartDelay: time.Hour}, slog.New(logs))

	for range 3 {
		o := offer(t, m, "fetch_url", "gone.*")
		if got := toolNames(o); !slices.Equal(got, []string{"fetch_url"}) {
			t.Errorf("got tools %q, want fetch_url only", got)
		}
		if len(o.Unavailable) != 1 || o.Unavailable[0].Server != "gone" || !strings.Contains(o.Unavailable[0].Reason, "no-such-server") {
			t.Errorf("got unavailable %+v, want gone, with the reason", o.Unavailable)
		}
		if n := o.Notice(); !strings.Contains(n, "gone") {
			t.Errorf("got notice %q, want it to name the server", n)
		}
	}
	r := m.Call(t.Context(), "", "gone__echo", `{}`)
	if !r.IsError || !strings.Contains(r.Text, "MCP server gone is unavailable") || !strings.Contains(r.Text, "next try in") {
		t.Errorf("got %+v, want an error result saying the server is unavailable until its next try", r)
	}
	if n := logs.count(slog.LevelWarn, "mcp server unavailable"); n != 1 {
		t.Errorf("logged the failure %d times at warn level, want once", n)
	}
}

func TestCrashingServerBacksOff(t *testing.T) {
	t.Parallel()
	starts := filepath.Join(t.TempDir(), "starts")
	logs := &logRecorder{}
	m := setup(t, []tools.Server{
		stdioServer("crash", map[string]string{"MCPTEST_START_FILE": starts, "MCPTEST_FAIL_START": "cannot open the database"}),
	}, tools.Options{RestartDelay: time.Hour}, slog.New(logs))
	for range 4 {
		r := m.Call(t.Context(), "", "crash__echo", `{"text": "x"}`)
		if !r.IsError || !strings.Contains(r.Text, "MCP server crash is unavailable") || strings.Contains(r.Text, "database") {
			t.Errorf("got %+v, want an error result without the server's stderr", r)
		}
	}
	if got := logs.attr(slog.LevelWarn, "mcp server unavailable", "stderr"); got != "mcptestserver: cannot open the database" {
		t.Errorf("logged stderr %q, want the server's last line", got)
	}
	// The first failure is retried at once; then the hour's backoff holds.
	if n := len(lines(t, starts)); n != 2 {
		t.Errorf("the server was started %d times, want 2", n)
	}
}

// A call that timed out was sent: the model is told it may have taken
// effect, as it is for an interrupted call, so it checks before making
// it again. (It was told only "timed out", and could redo a
// side-effecting call.)
func TestCallTimeout(t *testing.T) {
	t.Parallel()
	m := setup(t, []tools.Server{stdioServer("test", nil)}, tools.Options{CallTimeout: 500 * time.Millisecond}, nil)
	offer(t, m, "test.*") // start the server outside the timed call
	r := m.Call(t.Context(), "", "test__slow", `{"ms": 60000}`)
	if !r.IsError || r.Text != "test__slow: timed out after 500ms. It may or may not have taken effect; check before making it again." ||
		r.Duration > 10*time.Second {
		t.Errorf("got %+v, want a timeout error result", r)
	}
	if r := m.Call(t.Context(), "", "test__echo", `{"text": "still here"}`); r.IsError || r.Text != "still here" {
		t.Errorf("after a timeout: got %+v, want the server still serving", r)
	}
}

func TestOutputCap(t *testing.T) {
	t.Parallel()
	m := setup(t, []tools.Server{stdioServer("test", nil)}, tools.Options{MaxOutput: 1000}, nil)
	r := m.Call(t.Context(), "", "test__big", `{"bytes": 5000}`)
	want := strings.Repeat("0123456789abcdef", 63)[:1000] + "\n[output truncated: 1000 of 5000 bytes]"
	if r.IsError || r.Text != want || r.Size != 5000 {
		t.Errorf("got %q (error %v, size %d), want the first 1000 bytes, the marker and size 5000", r.Text, r.IsError, r.Size)
	}
	if r := m.Call(t.Context(), "", "test__big", `{"bytes": 1000}`); r.Text != want[:1000] {
		t.Errorf("at the cap: got %d bytes, want 1000 without a marker", len(r.Text))
	}
}

func TestConcurrentCallersShareOneServer(t *testing.T) {
	t.Parallel()
	starts := filepath.Join(t.TempDir(), "starts")
	m := setup(t, []tools.Server{stdioServer("test", map[string]string{"MCPTEST_START_FILE": starts})}, tools.Options{}, nil)
	var wg sync.WaitGroup
	errs := make(chan string, 20)
	for i := range 10 {
		wg.Go(func() {
			if o, err := m.Tools(t.Context(), "", []string{"test.echo"}); err != nil || len(o.Tools) != 1 {
				errs <- fmt.Sprintf("Tools: %v, %v", o, err)
			}
			text := fmt.Sprint("caller ", i)
			if r := m.Call(t.Context(), "", "test__echo", fmt.Sprintf(`{"text": %q}`, text)); r.Text != text {
				errs <- fmt.Sprintf("Call: got %+v, want %q", r, text)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if n := len(lines(t, starts)); n != 1 {
		t.Errorf("the server was started %d times, want once for every caller", n)
	}
}

func TestFetchURLTool(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/page", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<title>T</title><h2>Head</h2><p>Body text.</p>")
	})
	mux.HandleFunc("/blob", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(make([]byte, 3000))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("x", 10000))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	allowed := setup(t, nil, tools.Options{Fetch: fetch.Options{Allow: []string{"127.0.0.1"}}}, nil)
	strict := setup(t, nil, tools.Options{}, nil)
	capped := setup(t, nil, tools.Options{MaxOutput: 1000, Fetch: fetch.Options{Allow: []string{"127.0.0.1"}, MaxBody: 4000}}, nil)

	tests := []struct {
		m       *tools.Manager
		args    string
		want    string
		wantErr bool
	}{
		{allowed, `{"url": "` + srv.URL + `/start"}`, "URL: " + srv.URL + "/page\nStatus: 200 OK\nContent-Type: text/html\n\n# T\n\n## Head\n\nBody text.", false},
		{allowed, `{"url": "` + srv.URL + `/blob"}`, "[application/octet-stream content, 3 KiB read: not text, not shown]", false},
		{allowed, `{"url": "` + srv.URL + `/nothing"}`, "Status: 404 Not Found", true},
		{strict, `{"url": "` + srv.URL + `/page"}`, "127.0.0.1 is a loopback address: not fetched", true},
		{strict, `{"link": "x"}`, `give {"url"`, true},
		{capped, `{"url": "` + srv.URL + `/big"}`, "[only the first 4000 bytes of the body were read]\n\nxxx", false},
		{capped, `{"url": "` + srv.URL + `/big"}`, "xxx\n[output truncated: 1000 of ", false},
	}
	for _, tc := range tests {
		r := tc.m.Call(t.Context(), "", "fetch_url", string(tc.args))
		if r.IsError != tc.wantErr || !strings.Contains(r.Text, tc.want) {
			t.Errorf("fetch_url %s: got %q (error %v), want %q (error %v)", tc.args, r.Text, r.IsError, tc.want, tc.wantErr)
		}
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		servers []tools.Server
		opts    tools.Options
		want    string
	}{
		{[]tools.Server{{Name: "Bad", URL: "http://x"}}, tools.Options{}, `server "Bad": name`},
		{[]tools.Server{{Name: "a", URL: "http://x"}, {Name: "a", URL: "http://y"}}, tools.Options{}, `server "a": declared twice`},
		{[]tools.Server{{Name: "a", URL: "http://x", Command: []string{"x"}}}, tools.Options{}, "exactly one"},
		{[]tools.Server{{Name: "a"}}, tools.Options{}, "exactly one"},
		{[]tools.Server{{Name: "a", Command: []string{""}}}, tools.Options{}, "program is empty"},
		{nil, tools.Options{Fetch: fetch.Options{Allow: []string{"10.0.0.0/40"}}}, "fetch_url: allow"},
	}
	for _, tc := range tests {
		if _, err := tools.New(tc.servers, nil, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): got %v, want an error containing %q", tc.servers, err, tc.want)
		}
	}
}

// A Streamable HTTP server cannot make callon read more than
// MaxResponse bytes of one response: the call fails instead. (Responses
// were read whole before the output was cut to 16 KiB.)
func TestStreamableHTTPResponseIsBounded(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(mcptest.Handler(mcptest.Options{}))
	t.Cleanup(srv.Close)
	m := setup(t, []tools.Server{{Name: "web", URL: srv.URL}}, tools.Options{MaxResponse: 64 << 10}, nil)
	r := m.Call(t.Context(), "", "web__big", `{"bytes": 1048576}`)
	if !r.IsError || !strings.Contains(r.Text, "larger than 64 KiB") {
		t.Errorf("a 1 MiB answer: got %q (error %v), want a refusal at 64 KiB", master.Truncate(r.Text, 200), r.IsError)
	}
	if r := m.Call(t.Context(), "", "web__big", `{"bytes": 1000}`); r.IsError || len(r.Text) != 1000 {
		t.Errorf("a small answer: got %d bytes (error %v)", len(r.Text), r.IsError)
	}
}
