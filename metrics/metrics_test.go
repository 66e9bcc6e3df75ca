package metrics

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/callonbot/callon/master"
)

type fakeLLM func(ctx context.Context, req master.ChatRequest) (master.ChatResponse, error)

func (f fakeLLM) Chat(ctx context.Context, req master.ChatRequest) (master.ChatResponse, error) {
	return f(ctx, req)
}

type fakeBacklog struct {
	reads atomic.Int32
	err   error
}

func (f *fakeBacklog) Backlog(context.Context) (master.Backlog, error) {
	n := f.reads.Add(1)
	if f.err != nil {
		return master.Backlog{}, f.err
	}
	return master.Backlog{
		Turns:          map[master.TurnState]int{master.TurnQueued: 2, master.TurnRunning: 1, master.TurnWaiting: 0},
		Tasks:          map[master.TaskState]int{master.TaskQueued: 3, master.TaskRunning: int(n)},
		ClaimableTasks: 2, OutboxPending: 4, OutboxOldest: 90 * time.Second, WebhookPending: 1,
		ActiveSessions: 5, Processes: 2,
	}, nil
}

// scrape returns the /metrics page.
func scrape(t *testing.T, r *Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Result().Body)
	if rec.Code != 200 {
		t.Fatalf("GET /metrics = %d: %s", rec.Code, body)
	}
	return string(body)
}

func TestEveryNameIsPrefixedAndBuildInfoIsSet(t *testing.T) {
	t.Parallel()
	r := New(Config{Build: Build{Version: "v1.2.3", Revision: "abc123", GoVersion: "go1.26"}, Backlog: &fakeBacklog{}})
	page := scrape(t, r)
	for line := range strings.Lines(page) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.HasPrefix(line, "callon_") {
			t.Errorf("metric not prefixed callon_: %s", line)
		}
	}
	for _, want := range []string{
		`callon_build_info{go_version="go1.26",revision="abc123",version="v1.2.3"} 1`,
		`callon_tasks{state="queued"} 3`,
		`callon_turns_open{state="queued"} 2`,
		`callon_task_queue_depth 2`,
		`callon_outbox_pending 4`,
		`callon_outbox_oldest_pending_seconds 90`,
		`callon_webhook_pending 1`,
		`callon_sessions_active 5`,
		`callon_processes 2`,
		`callon_go_goroutines`,
		`callon_process_`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestBacklogIsReadAtMostEveryInterval(t *testing.T) {
	t.Parallel()
	store := &fakeBacklog{}
	r := New(Config{Backlog: store, BacklogEvery: time.Hour})
	for range 5 {
		scrape(t, r)
	}
	if n := store.reads.Load(); n != 1 {
		t.Errorf("5 scrapes read the backlog %d times, want 1", n)
	}
	if page := scrape(t, r); !strings.Contains(page, `callon_tasks{state="running"} 1`) {
		t.Errorf("the cached value is not served:\n%s", page)
	}

	failing := &fakeBacklog{err: errors.New("database down")}
	r = New(Config{Backlog: failing, BacklogEvery: time.Nanosecond})
	page := scrape(t, r)
	if strings.Contains(page, "callon_tasks{") || !strings.Contains(page, "callon_backlog_read_errors_total 1") {
		t.Errorf("a failed first read: want no backlog gauges and one error counted, got\n%s", page)
	}
}

func TestModelCallsAreCountedByCallerModelAndResult(t *testing.T) {
	t.Parallel()
	r := New(Config{Prices: map[string]Price{"big": {Prompt: 2, Completion: 10}}})
	ok := r.LLM("master", fakeLLM(func(context.Context, master.ChatRequest) (master.ChatResponse, error) {
		return master.ChatResponse{Usage: master.Usage{PromptTokens: 1000, CompletionTokens: 500}}, nil
	}))
	refused := r.LLM("worker", fakeLLM(func(context.Context, master.ChatRequest) (master.ChatResponse, error) {
		return master.ChatResponse{}, &master.Error{Code: master.EModel, Message: "no such model"}
	}))
	failing := r.LLM("worker", fakeLLM(func(context.Context, master.ChatRequest) (master.ChatResponse, error) {
		return master.ChatResponse{}, errors.New("503")
	}))
	ctx := t.Context()
	for range 2 {
		if _, err := ok.Chat(ctx, master.ChatRequest{Model: "big"}); err != nil {
			t.Fatal(err)
		}
	}
	_, _ = refused.Chat(ctx, master.ChatRequest{Model: "small"})
	_, _ = failing.Chat(ctx, master.ChatRequest{Model: "small"})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _ = r.LLM("worker", fakeLLM(func(ctx context.Context, _ master.ChatRequest) (master.ChatResponse, error) {
		return master.ChatResponse{}, ctx.Err()
	})).Chat(cctx, master.ChatRequest{Model: "small"})

	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"master", "big", "ok"}, 2},
		{[]string{"worker", "small", "refused"}, 1},
		{[]string{"worker", "small", "error"}, 1},
		{[]string{"worker", "small", "canceled"}, 1},
	} {
		if got := testutil.ToFloat64(r.llmCalls.WithLabelValues(c.labels...)); got != c.want {
			t.Errorf("calls %v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := testutil.ToFloat64(r.llmTokens.WithLabelValues("master", "big", "prompt")); got != 2000 {
		t.Errorf("prompt tokens = %v, want 2000", got)
	}
	if got := testutil.ToFloat64(r.llmTokens.WithLabelValues("master", "big", "completion")); got != 1000 {
		t.Errorf("completion tokens = %v, want 1000", got)
	}
	// 2 × (1000 × 2 + 500 × 10) / 1e6
	if got := testutil.ToFloat64(r.llmCost.WithLabelValues("master", "big")); got < 0.013999 || got > 0.014001 {
		t.Errorf("cost = %v, want 0.014", got)
	}
	if n := testutil.CollectAndCount(r.llmCost); n != 1 {
		t.Errorf("cost series = %d, want 1 (a model without a price has no cost)", n)
	}
	if n := testutil.CollectAndCount(r.llmDuration); n != 2 {
		t.Errorf("latency series = %d, want 2", n)
	}
}

func TestDomainCountersMove(t *testing.T) {
	t.Parallel()
	r := New(Config{})
	r.TurnStarted()
	r.TurnEnded(master.OutcomeReply, 3*time.Second)
	r.TurnEnded(master.OutcomeQuestion, time.Second)
	r.ToolCalled("master", "reply", "ok")
	r.TaskEnded("writer", master.TaskDone, time.Second)
	r.OutboxDelivered(master.OutReply, "sent", 200*time.Millisecond)
	r.OutboxDelivered(master.OutReply, "retry", 0)
	r.WebhookDelivered("delivered")
	r.APIRequest("dispatch", "ok")
	r.LimitHit(master.LimitRounds)
	r.DiscordRequest("POST /channels/{id}/messages", 200)
	r.DiscordRequest("POST /channels/{id}/messages", 429)
	r.DiscordRequest("POST /channels/{id}/messages", 0)
	r.GatewayConnected(1, true)
	r.GatewayReconnected(1)

	page := scrape(t, r)
	for _, want := range []string{
		"callon_turns_started_total 1",
		`callon_turns_ended_total{outcome="reply"} 1`,
		`callon_turn_duration_seconds_count{outcome="question"} 1`,
		`callon_tool_calls_total{caller="master",result="ok",tool="reply"} 1`,
		`callon_tasks_ended_total{state="done"} 1`,
		`callon_role_tasks_total{outcome="done",role="writer"} 1`,
		`callon_role_task_duration_seconds_count{role="writer"} 1`,
		`callon_outbox_deliveries_total{kind="reply",result="retry"} 1`,
		`callon_outbox_delivery_seconds_count{kind="reply"} 1`,
		`callon_webhook_deliveries_total{result="delivered"} 1`,
		`callon_api_requests_total{code="ok",endpoint="dispatch"} 1`,
		`callon_limits_hit_total{limit="rounds"} 1`,
		`callon_discord_requests_total{route="POST /channels/{id}/messages",status="2xx"} 1`,
		`callon_discord_requests_total{route="POST /channels/{id}/messages",status="429"} 1`,
		`callon_discord_requests_total{route="POST /channels/{id}/messages",status="error"} 1`,
		`callon_discord_rate_limited_total{route="POST /channels/{id}/messages"} 1`,
		`callon_gateway_connected{shard="1"} 1`,
		`callon_gateway_reconnects_total{shard="1"} 1`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// The role label is bounded: the configured roles by name, the first
// few others by name, every later name as "other".
func TestRoleLabelIsBounded(t *testing.T) {
	t.Parallel()
	r := New(Config{Roles: []string{"writer"}, OtherRoles: 2})
	for _, role := range []string{"made-up-1", "made-up-2", "made-up-3", "made-up-4", "writer", "made-up-1"} {
		r.TaskEnded(role, master.TaskFailed, time.Second)
	}
	page := scrape(t, r)
	for _, want := range []string{
		`callon_role_tasks_total{outcome="failed",role="writer"} 1`,
		`callon_role_tasks_total{outcome="failed",role="made-up-1"} 2`,
		`callon_role_tasks_total{outcome="failed",role="made-up-2"} 1`,
		`callon_role_tasks_total{outcome="failed",role="other"} 2`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(page, "made-up-3") || strings.Contains(page, "made-up-4") {
		t.Errorf("a role past the bound has a label of its own")
	}
}
