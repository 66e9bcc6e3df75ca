// Package metrics exports what callon measures to Prometheus: it is the
// only package that imports client_golang. Its Registry implements the
// small measurement ports the other packages declare (master.Metrics,
// workers.Metrics, bot.Metrics), wraps the model client to count calls,
// latency, tokens and cost, reads the database backlog at most every few
// seconds, and serves it all on /metrics. Every name starts with callon_.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/callonbot/callon/master"
)

// Build names the running binary, for callon_build_info.
type Build struct {
	Version   string // the release, such as 0.1.0 (0.1.0+dev built from a checkout)
	Revision  string // the VCS revision, "" when unknown
	GoVersion string
}

// Price is what a model costs per million tokens, in the currency of the
// price table (the same for every model).
type Price struct {
	Prompt     float64
	Completion float64
}

// Config sets up a Registry. Every field is optional.
type Config struct {
	Build Build
	// Prices by model: a model listed here has its calls' cost counted in
	// callon_llm_cost_total.
	Prices map[string]Price
	// Backlog, when set, is read for the backlog gauges at most once per
	// BacklogEvery (default 5 s), however often /metrics is scraped.
	Backlog      master.BacklogStore
	BacklogEvery time.Duration
	// Roles are the role names the operator configured (the roles file's
	// and the built-in ones): each gets its own value of the role label.
	// Other names (an admin's /roles, a model's replan) get theirs while
	// fewer than OtherRoles (default 20) such names have been seen, and
	// count as "other" after: the label stays bounded whatever is named.
	Roles      []string
	OtherRoles int
}

// Registry holds callon's metrics. Its methods are safe for concurrent
// use and never block on I/O (except Handler's backlog read, bounded).
type Registry struct {
	reg    *prometheus.Registry
	prices map[string]Price

	turnsStarted  prometheus.Counter
	turnsEnded    *prometheus.CounterVec
	turnDuration  *prometheus.HistogramVec
	llmCalls      *prometheus.CounterVec
	llmDuration   *prometheus.HistogramVec
	llmTokens     *prometheus.CounterVec
	llmCost       *prometheus.CounterVec
	toolCalls     *prometheus.CounterVec
	tasksEnded    *prometheus.CounterVec
	taskDuration  *prometheus.HistogramVec
	roleTasks     *prometheus.CounterVec
	roleDuration  *prometheus.HistogramVec
	roles         *roleLabels
	outboxSends   *prometheus.CounterVec
	outboxLatency *prometheus.HistogramVec
	webhooks      *prometheus.CounterVec
	apiRequests   *prometheus.CounterVec
	limits        *prometheus.CounterVec
	discordCalls  *prometheus.CounterVec
	discord429s   *prometheus.CounterVec
	gatewayUp     *prometheus.GaugeVec
	reconnects    *prometheus.CounterVec
}

var _ master.Metrics = (*Registry)(nil)

// New returns a registry with every metric registered, the Go runtime's
// and the process's own included (as callon_go_* and callon_process_*).
func New(cfg Config) *Registry {
	reg := prometheus.NewRegistry()
	f := factory{reg}
	r := &Registry{
		reg:    reg,
		prices: cfg.Prices,
		roles:  newRoleLabels(cfg.Roles, cfg.OtherRoles),
		turnsStarted: f.counter("callon_turns_started_total",
			"Turns (user messages) whose first decision the master started."),
		turnsEnded: f.counterVec("callon_turns_ended_total",
			"Turns that stopped running, by outcome: reply, question (the turn may run again with the answer), apology (the master gave up), refused (the model server refuses the master).", "outcome"),
		turnDuration: f.histogramVec("callon_turn_duration_seconds",
			"From a message being recorded to its turn's reply or question being queued, by outcome.",
			[]float64{0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800}, "outcome"),
		llmCalls: f.counterVec("callon_llm_calls_total",
			"Model calls (each after its retries), by caller (master or worker), model and result: ok, error (unreachable after retries), refused (an answer retrying cannot change: key, model, request) or canceled.", "caller", "model", "result"),
		llmDuration: f.histogramVec("callon_llm_call_duration_seconds",
			"Model call latency, retries included, by caller and model.",
			[]float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300}, "caller", "model"),
		llmTokens: f.counterVec("callon_llm_tokens_total",
			"Tokens used by model calls, by caller, model and type (prompt or completion).", "caller", "model", "type"),
		llmCost: f.counterVec("callon_llm_cost_total",
			"Cost of model calls in the price table's currency, by caller and model; only models with a price.", "caller", "model"),
		toolCalls: f.counterVec("callon_tool_calls_total",
			"Tool calls made by models, by caller (master or worker), tool, and result (ok, invalid or refused).", "caller", "tool", "result"),
		tasksEnded: f.counterVec("callon_tasks_ended_total",
			"Tasks whose outcome a worker wrote, by state: done, failed, blocked, need_info, timeout.", "state"),
		taskDuration: f.histogramVec("callon_task_duration_seconds",
			"A task's time in the worker that ended it, by state.",
			[]float64{1, 2, 5, 10, 30, 60, 120, 300, 600, 1800}, "state"),
		roleTasks: f.counterVec("callon_role_tasks_total",
			"Tasks whose outcome a worker wrote, by role (the configured roles by name, a bounded number of others, then other) and outcome: done, failed, blocked, need_info, timeout.", "role", "outcome"),
		roleDuration: f.histogramVec("callon_role_task_duration_seconds",
			"A task's time in the worker that ended it, by role (as in callon_role_tasks_total).",
			[]float64{1, 2, 5, 10, 30, 60, 120, 300, 600, 1800}, "role"),
		outboxSends: f.counterVec("callon_outbox_deliveries_total",
			"Outbox delivery attempts, by kind (reply, question, kickoff, notice, summary, report) and result (sent, retry, failed).", "kind", "result"),
		outboxLatency: f.histogramVec("callon_outbox_delivery_seconds",
			"From an outbox message being queued to being in Discord, by kind.",
			[]float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600}, "kind"),
		webhooks: f.counterVec("callon_webhook_deliveries_total",
			"Webhook delivery attempts, by result: delivered, retry, failed, interrupted.", "result"),
		apiRequests: f.counterVec("callon_api_requests_total",
			"Requests to the inbound API, by endpoint (dispatch, message, session, other) and code: ok, or the error's code.", "endpoint", "code"),
		limits: f.counterVec("callon_limits_hit_total",
			"Limits that refused or cut work short, by limit.", "limit"),
		discordCalls: f.counterVec("callon_discord_requests_total",
			"Discord REST requests (each retry counts), by route (method and path, ids as {id}) and status: the HTTP status class (2xx, 4xx, 5xx), 429, or error (no answer).", "route", "status"),
		discord429s: f.counterVec("callon_discord_rate_limited_total",
			"Discord REST answers 429 (rate limited), by route.", "route"),
		gatewayUp: f.gaugeVec("callon_gateway_connected",
			"1 while the shard's gateway connection is up (READY or RESUMED, not disconnected since), else 0.", "shard"),
		reconnects: f.counterVec("callon_gateway_reconnects_total",
			"Gateway connections re-established after a disconnection, by shard.", "shard"),
	}
	b := cfg.Build
	info := f.gaugeVec("callon_build_info", "Always 1; the labels name the running binary.", "version", "revision", "go_version")
	info.WithLabelValues(b.Version, b.Revision, b.GoVersion).Set(1)
	prefixed := prometheus.WrapRegistererWithPrefix("callon_", reg)
	prefixed.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.Backlog != nil {
		reg.MustRegister(newBacklog(cfg.Backlog, cfg.BacklogEvery))
	}
	return r
}

// Handler serves the metrics in Prometheus's text format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{})
}

// TurnStarted implements master.Metrics.
func (r *Registry) TurnStarted() { r.turnsStarted.Inc() }

// TurnEnded implements master.Metrics.
func (r *Registry) TurnEnded(outcome master.TurnOutcome, took time.Duration) {
	r.turnsEnded.WithLabelValues(string(outcome)).Inc()
	r.turnDuration.WithLabelValues(string(outcome)).Observe(took.Seconds())
}

// ToolCalled implements master.Metrics and workers.Metrics.
func (r *Registry) ToolCalled(caller, tool, result string) {
	r.toolCalls.WithLabelValues(caller, tool, result).Inc()
}

// TaskEnded implements workers.Metrics.
func (r *Registry) TaskEnded(role string, state master.TaskState, took time.Duration) {
	r.tasksEnded.WithLabelValues(string(state)).Inc()
	r.taskDuration.WithLabelValues(string(state)).Observe(took.Seconds())
	role = r.roles.label(role)
	r.roleTasks.WithLabelValues(role, string(state)).Inc()
	r.roleDuration.WithLabelValues(role).Observe(took.Seconds())
}

// OutboxDelivered implements master.Metrics.
func (r *Registry) OutboxDelivered(kind master.OutKind, result string, took time.Duration) {
	r.outboxSends.WithLabelValues(string(kind), result).Inc()
	if result == "sent" {
		r.outboxLatency.WithLabelValues(string(kind)).Observe(took.Seconds())
	}
}

// APIRequest implements api.Metrics.
func (r *Registry) APIRequest(endpoint, code string) {
	r.apiRequests.WithLabelValues(endpoint, code).Inc()
}

// WebhookDelivered implements master.Metrics.
func (r *Registry) WebhookDelivered(result string) { r.webhooks.WithLabelValues(result).Inc() }

// LimitHit implements master.Metrics.
func (r *Registry) LimitHit(limit string) { r.limits.WithLabelValues(limit).Inc() }

// DiscordRequest implements bot.Metrics: one REST request's answer, status
// 0 when none came.
func (r *Registry) DiscordRequest(route string, status int) {
	class := "error"
	switch {
	case status == http.StatusTooManyRequests:
		class = "429"
		r.discord429s.WithLabelValues(route).Inc()
	case status >= 100:
		class = strconv.Itoa(status/100) + "xx"
	}
	r.discordCalls.WithLabelValues(route, class).Inc()
}

// GatewayConnected implements bot.Metrics.
func (r *Registry) GatewayConnected(shard int, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	r.gatewayUp.WithLabelValues(strconv.Itoa(shard)).Set(v)
}

// GatewayReconnected implements bot.Metrics.
func (r *Registry) GatewayReconnected(shard int) {
	r.reconnects.WithLabelValues(strconv.Itoa(shard)).Inc()
}

// factory registers metrics as it makes them.
type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}
