package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// get fetches a URL: its status and body, or status 0 when nothing
// answered.
func get(url string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// waitGet waits until GET url answers status, and returns the body.
func (w *world) waitGet(url string, status int) string {
	w.t.Helper()
	var body string
	w.dc.WaitFor(w.t, func() bool {
		var got int
		got, body = get(url)
		return got == status
	}, "GET "+url+" to answer "+strconv.Itoa(status))
	return body
}

// waitMetric waits until the /metrics page at base has a line starting
// with series whose value passes ok, and returns the value.
func (w *world) waitMetric(base, series string, ok func(float64) bool) float64 {
	w.t.Helper()
	var v float64
	w.dc.WaitFor(w.t, func() bool {
		var found bool
		v, found = metric(base, series)
		return found && ok(v)
	}, series+" in /metrics")
	return v
}

// metric reads one series' value from the /metrics page at base.
func metric(base, series string) (float64, bool) {
	_, page := get(base + "/metrics")
	for line := range strings.Lines(page) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

func atLeast(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }

// process runs callon in this test process with args, on the world's
// configuration changed by env; the returned function stops it.
func (w *world) process(args []string, env ...string) (stop func()) {
	w.t.Helper()
	conf := maps.Clone(w.env)
	for i := 0; i+1 < len(env); i += 2 {
		conf[env[i]] = env[i+1]
	}
	ctx, cancel := context.WithCancel(context.Background())
	logs := &testLog{t: w.t, book: w.logs}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, args, func(k string) string { return conf[k] }, strings.NewReader(""), logs, logs)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					w.t.Errorf("callon %v returned %v", args, err)
				}
			case <-time.After(30 * time.Second):
				w.t.Errorf("callon %v did not stop within 30 s", args)
			}
			logs.close()
		})
	}
	w.t.Cleanup(stop)
	return stop
}

// callonProcess runs the callon binary (this test binary, as callon) with
// args and env, and returns its exit code and what it wrote.
func callonProcess(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = []string{asCallon + "=1", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("run callon %v: %v", args, err)
	return 0, "", ""
}

// /readyz is 200 only while the gateway is connected (and Postgres
// answers); /healthz only says the process runs; `callon healthcheck`
// exits 0 exactly when /readyz says ready. A `callon worker` has no
// gateway: its /readyz asks Postgres only.
func TestReadinessFollowsTheGateway(t *testing.T) {
	t.Parallel()
	addr, workerAddr := freeAddr(t), freeAddr(t)
	w := setup(t, nil, "CALLON_HTTP_ADDR", addr)
	base := "http://" + addr
	probe := map[string]string{"CALLON_HTTP_ADDR": addr}

	if body := w.waitGet(base+"/readyz", http.StatusOK); strings.TrimSpace(body) != `{"ready":true}` {
		t.Errorf("ready /readyz body = %s", body)
	}
	if code, out, errOut := callonProcess(t, probe, "healthcheck"); code != 0 {
		t.Errorf("callon healthcheck while ready: exit %d (%s%s), want 0", code, out, errOut)
	}
	w.process([]string{"worker"}, "CALLON_HTTP_ADDR", workerAddr)

	w.dc.StopGateway()
	body := w.waitGet(base+"/readyz", http.StatusServiceUnavailable)
	var r readiness
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Ready || r.Down["gateway"] != "disconnected" || len(r.Down) != 1 {
		t.Errorf("/readyz during the outage = %s (%v), want not ready, the gateway down", body, err)
	}
	if code, _ := get(base + "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz during the outage = %d, want 200: the process runs", code)
	}
	if _, _, err := runCmd(t, probe, "healthcheck"); err == nil || !strings.Contains(err.Error(), "gateway") {
		t.Errorf("healthcheck during the outage: %v, want an error naming the gateway", err)
	}
	if code, _, _ := callonProcess(t, probe, "healthcheck"); code != 1 {
		t.Errorf("callon healthcheck during the outage: exit %d, want 1", code)
	}
	if body := w.waitGet("http://"+workerAddr+"/readyz", http.StatusOK); !strings.Contains(body, `"ready":true`) {
		t.Errorf("the worker's /readyz during the outage = %s, want ready: it has no gateway", body)
	}
	w.dc.StartGateway()

	w.waitGet(base+"/readyz", http.StatusOK)
	if code, _, _ := callonProcess(t, probe, "healthcheck"); code != 0 {
		t.Errorf("callon healthcheck after the outage: exit %d, want 0", code)
	}
	w.waitMetric(base, `callon_gateway_reconnects_total{shard="0"}`, atLeast(1))
	w.waitMetric(base, `callon_gateway_connected{shard="0"}`, func(v float64) bool { return v == 1 })

	if code, _, errOut := callonProcess(t, map[string]string{"CALLON_HTTP_ADDR": freeAddr(t)}, "healthcheck"); code != 1 || !strings.Contains(errOut, "not ready") {
		t.Errorf("callon healthcheck with nothing listening: exit %d, %q; want 1, not ready", code, errOut)
	}
	if code, _, errOut := callonProcess(t, nil, "healthcheck"); code != 1 || !strings.Contains(errOut, "CALLON_HTTP_ADDR") {
		t.Errorf("callon healthcheck without CALLON_HTTP_ADDR: exit %d, %q; want 1 and the variable named", code, errOut)
	}
}

func TestReadyURL(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		":8080":          "http://127.0.0.1:8080/readyz",
		"0.0.0.0:9000":   "http://127.0.0.1:9000/readyz",
		"[::]:9000":      "http://[::1]:9000/readyz",
		"10.0.0.5:80":    "http://10.0.0.5:80/readyz",
		"localhost:8080": "http://localhost:8080/readyz",
	} {
		if got, err := readyURL(addr); err != nil || got != want {
			t.Errorf("readyURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	if _, err := readyURL("8080"); err == nil {
		t.Error("readyURL(\"8080\") gave no error")
	}
}

// After one delegated turn, the metrics of every part of it have moved.
func TestMetricsMoveAfterATurn(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(delegate(task{Role: "researcher", Instruction: "look"}), reply("the answer"))),
		llmtest.Match("You are the researcher", llmtest.Always(report("found")))),
		"CALLON_HTTP_ADDR", addr, "CALLON_MASTER_MODEL", "boss-model", "CALLON_WORKER_MODEL", "hand-model")
	base := "http://" + addr
	thread := w.team("Metrics")
	w.dc.RateLimit(discordtest.RouteCreateMessage, 1, 10*time.Millisecond)
	msg := w.say(thread, "go")
	if got := w.waitReply(thread, msg); got != "the answer" {
		t.Fatalf("reply = %q", got)
	}
	for _, m := range []struct {
		series string
		ok     func(float64) bool
	}{
		{`callon_turns_started_total`, atLeast(1)},
		{`callon_turns_ended_total{outcome="reply"}`, atLeast(1)},
		{`callon_turn_duration_seconds_count{outcome="reply"}`, atLeast(1)},
		{`callon_llm_calls_total{caller="master",model="boss-model",result="ok"}`, atLeast(2)},
		{`callon_llm_calls_total{caller="worker",model="hand-model",result="ok"}`, atLeast(1)},
		{`callon_llm_call_duration_seconds_count{caller="master",model="boss-model"}`, atLeast(2)},
		{`callon_llm_tokens_total{caller="master",model="boss-model",type="prompt"}`, atLeast(1)},
		{`callon_llm_tokens_total{caller="worker",model="hand-model",type="completion"}`, atLeast(1)},
		{`callon_tool_calls_total{caller="master",result="ok",tool="delegate"}`, atLeast(1)},
		{`callon_tool_calls_total{caller="master",result="ok",tool="reply"}`, atLeast(1)},
		{`callon_tool_calls_total{caller="worker",result="ok",tool="report"}`, atLeast(1)},
		{`callon_tasks_ended_total{state="done"}`, atLeast(1)},
		{`callon_outbox_deliveries_total{kind="reply",result="sent"}`, atLeast(1)},
		{`callon_outbox_delivery_seconds_count{kind="kickoff"}`, atLeast(1)},
		{`callon_discord_requests_total{route="POST /channels/{id}/messages",status="2xx"}`, atLeast(2)},
		{`callon_discord_requests_total{route="PUT /applications/{id}/commands",status="2xx"}`, atLeast(1)},
		{`callon_discord_requests_total{route="POST /channels/{id}/messages",status="429"}`, atLeast(1)},
		{`callon_discord_rate_limited_total{route="POST /channels/{id}/messages"}`, atLeast(1)},
		{`callon_gateway_connected{shard="0"}`, func(v float64) bool { return v == 1 }},
		{`callon_sessions_active`, atLeast(1)},
		{`callon_processes`, atLeast(1)},
		{`callon_outbox_pending`, atLeast(0)},
		{`callon_tasks{state="queued"}`, atLeast(0)},
		{`callon_task_queue_depth`, atLeast(0)},
		{`callon_go_goroutines`, atLeast(1)},
	} {
		w.waitMetric(base, m.series, m.ok)
	}
	_, page := get(base + "/metrics")
	if !regexp.MustCompile(`(?m)^callon_build_info\{go_version="go[^"]+",revision="[^"]*",version="[^"]+"\} 1$`).MatchString(page) {
		t.Errorf("/metrics has no callon_build_info:\n%s", page)
	}
}

// In JSON mode every line is a JSON object, the configuration a nested
// object with its secrets redacted, and the error that stops callon a JSON
// line too; a line with a turn or task id names its session (and turn).
func TestJSONLogs(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(delegate(task{Role: "researcher", Instruction: "look"}), reply("done"))),
		llmtest.Match("You are the researcher", llmtest.Always(report("found")))),
		"LOG_FORMAT", "json")
	thread := w.team("JSON")
	msg := w.say(thread, "go")
	w.waitReply(thread, msg)
	w.dc.WaitFor(t, func() bool { return w.logged(`"msg":"task ended"`) && w.logged(`"msg":"turn answered"`) }, "the task's and the turn's log lines")
	w.stop()

	w.logs.mu.Lock()
	lines := append([]string(nil), w.logs.lines...)
	w.logs.mu.Unlock()
	var sawConfig bool
	for _, line := range lines {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Errorf("not a JSON line: %v: %s", err, line)
			continue
		}
		if l["msg"] == "starting callon" {
			cfg, _ := l["config"].(map[string]any)
			sawConfig = cfg["discord_token"] == "(set)" && cfg["openai_api_key"] == "(set)" && cfg["log_format"] == "json"
			// What matters: what was set, and where callon's data and
			// models are; not every default.
			if len(line) > 1000 || cfg["task_lease"] != "3s" || cfg["master_model"] != "gpt-4o" || cfg["max_rounds"] != nil {
				t.Errorf("the start-up line (%d bytes) should hold the settings that differ from the defaults and the essentials: %s", len(line), line)
			}
		}
		if dup := duplicateKeys(line); len(dup) > 0 {
			t.Errorf("a line has the keys %v twice: %s", dup, line)
		}
		_, turn := l["turn_id"]
		_, task := l["task_id"]
		_, session := l["session_id"]
		if (turn || task) && !session || task && !turn {
			t.Errorf("a line about a turn or task lacks its ids: %s", line)
		}
	}
	if !sawConfig {
		t.Error("no \"starting callon\" line with the configuration as an object, secrets redacted")
	}

	// A bad configuration, through run and from a real process.
	bad := map[string]string{"LOG_FORMAT": "json", "CALLON_MAX_ROUNDS": "lots", "DISCORD_TOKEN": "secret-token", "DISCORD_SHARD_IDS": "x"}
	_, errOut, err := runCmd(t, bad)
	if err == nil {
		t.Fatal("run with a bad configuration returned nil")
	}
	for _, out := range []string{errOut, func() string { _, _, e := callonProcess(t, bad); return e }()} {
		var l struct {
			Level    string              `json:"level"`
			Msg      string              `json:"msg"`
			Err      string              `json:"err"`
			Problems []map[string]string `json:"problems"`
		}
		if n := strings.Count(strings.TrimSpace(out), "\n"); n != 0 {
			t.Errorf("the fatal error is %d lines, want one JSON line:\n%s", n+1, out)
		}
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Errorf("the fatal error is not JSON: %v: %s", err, out)
			continue
		}
		vars := map[string]bool{}
		for _, p := range l.Problems {
			vars[p["var"]] = true
		}
		if l.Level != "ERROR" || l.Msg != "callon stopped" || !vars["CALLON_MAX_ROUNDS"] || !vars["DISCORD_SHARD_IDS"] || !vars["OPENAI_API_KEY"] {
			t.Errorf("fatal error line = %+v, want level ERROR, and each bad variable as a problem", l)
		}
		if strings.Contains(out, "secret-token") {
			t.Errorf("the fatal error holds the token: %s", out)
		}
	}
	// An error after the configuration: a database that does not answer.
	code, _, out := callonProcess(t, map[string]string{"LOG_FORMAT": "json", "DATABASE_URL": "postgres://callon:pw@127.0.0.1:1/callon?connect_timeout=2"}, "migrate")
	if code != 1 {
		t.Errorf("migrate against a closed port: exit %d, want 1", code)
	}
	for line := range strings.Lines(out) {
		if !json.Valid([]byte(line)) {
			t.Errorf("not a JSON line: %s", line)
		}
	}
	if !strings.Contains(out, `"msg":"callon stopped"`) {
		t.Errorf("no fatal error line in:\n%s", out)
	}
}

func TestVersionNamesTheBuild(t *testing.T) {
	t.Parallel()
	out, _, err := runCmd(t, nil, "version")
	if err != nil || !strings.HasPrefix(out, "callon "+version) || !strings.Contains(out, runtime.Version()) {
		t.Errorf("callon version = %q, %v; want the version and the Go version", out, err)
	}
}

func TestUnknownCommandInJSONModeWritesOnlyJSON(t *testing.T) {
	t.Parallel()
	_, errOut, err := runCmd(t, map[string]string{"LOG_FORMAT": "json"}, "frobnicate")
	if err == nil || !json.Valid([]byte(strings.TrimSpace(errOut))) || !strings.Contains(errOut, "frobnicate") {
		t.Errorf("unknown command in JSON mode: err %v, stderr %q; want one JSON line naming it", err, errOut)
	}
}

// /readyz names each check that fails, and only those.
func TestReadyzNamesWhatIsDown(t *testing.T) {
	t.Parallel()
	dbUp := true
	h := newOpsHandler(map[string]check{
		"database": func(context.Context) string {
			if dbUp {
				return ""
			}
			return "not answering"
		},
		"gateway": func(context.Context) string { return "" },
	}, http.NotFoundHandler(), nil, nil)
	serve := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	if code, body := serve("/readyz"); code != http.StatusOK || body != `{"ready":true}` {
		t.Errorf("all up: /readyz = %d %s", code, body)
	}
	dbUp = false
	if code, body := serve("/readyz"); code != http.StatusServiceUnavailable || body != `{"ready":false,"down":{"database":"not answering"}}` {
		t.Errorf("database down: /readyz = %d %s", code, body)
	}
	if code, _ := serve("/healthz"); code != http.StatusOK {
		t.Errorf("database down: /healthz = %d, want 200", code)
	}
}

// duplicateKeys lists the keys a JSON object line has more than once.
func duplicateKeys(line string) []string {
	dec := json.NewDecoder(strings.NewReader(line))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	seen := map[string]bool{}
	var dups []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return dups
		}
		key, _ := t.(string)
		if seen[key] {
			dups = append(dups, key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return dups
		}
	}
	return dups
}
