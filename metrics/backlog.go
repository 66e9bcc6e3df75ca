package metrics

import (
	"cmp"
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/callonbot/callon/master"
)

// backlogTimeout bounds one read of the backlog, so a slow database
// delays a scrape by at most this much.
const backlogTimeout = 2 * time.Second

// backlog is the collector of the gauges that need a query: it reads the
// store at most once per every, and between reads (or when a read fails)
// serves the last values it has.
type backlog struct {
	store master.BacklogStore
	every time.Duration

	turns, tasks, claimable, outbox, oldest, webhooks, sessions, processes *prometheus.Desc
	errs                                                                   prometheus.Counter

	mu     sync.Mutex
	read   time.Time // when last was read; zero before the first read
	last   master.Backlog
	loaded bool // last holds a successful read
}

func newBacklog(store master.BacklogStore, every time.Duration) *backlog {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	return &backlog{
		store:     store,
		every:     cmp.Or(every, 5*time.Second),
		turns:     d("callon_turns_open", "Open turns in the database (all processes), by state: queued, running, waiting.", "state"),
		tasks:     d("callon_tasks", "Open tasks in the database (all processes), by state: queued, running.", "state"),
		claimable: d("callon_task_queue_depth", "Queued tasks a worker could claim now (dependencies done, session active)."),
		outbox:    d("callon_outbox_pending", "Outbox messages not yet in Discord."),
		oldest:    d("callon_outbox_oldest_pending_seconds", "Age of the oldest outbox message not yet in Discord; 0 when none."),
		webhooks:  d("callon_webhook_pending", "Webhook events not yet delivered or given up."),
		sessions:  d("callon_sessions_active", "Active team sessions."),
		processes: d("callon_processes", "callon processes registered as alive on the database."),
		errs: prometheus.NewCounter(prometheus.CounterOpts{Name: "callon_backlog_read_errors_total",
			Help: "Failed reads of the backlog gauges; the last values read are served meanwhile."}),
	}
}

// Describe implements prometheus.Collector.
func (b *backlog) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{b.turns, b.tasks, b.claimable, b.outbox, b.oldest, b.webhooks, b.sessions, b.processes} {
		ch <- d
	}
	b.errs.Describe(ch)
}

// Collect implements prometheus.Collector.
func (b *backlog) Collect(ch chan<- prometheus.Metric) {
	v, ok := b.snapshot()
	b.errs.Collect(ch)
	if !ok {
		return
	}
	gauge := func(d *prometheus.Desc, n float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, n, labels...)
	}
	for st, n := range v.Turns {
		gauge(b.turns, float64(n), string(st))
	}
	for st, n := range v.Tasks {
		gauge(b.tasks, float64(n), string(st))
	}
	gauge(b.claimable, float64(v.ClaimableTasks))
	gauge(b.outbox, float64(v.OutboxPending))
	gauge(b.oldest, v.OutboxOldest.Seconds())
	gauge(b.webhooks, float64(v.WebhookPending))
	gauge(b.sessions, float64(v.ActiveSessions))
	gauge(b.processes, float64(v.Processes))
}

// snapshot returns the backlog, read again if the last read is older than
// every; false until a read has succeeded. Concurrent scrapes wait for
// one read rather than each making their own.
func (b *backlog) snapshot() (master.Backlog, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.read.IsZero() && time.Since(b.read) < b.every {
		return b.last, b.loaded
	}
	ctx, cancel := context.WithTimeout(context.Background(), backlogTimeout)
	defer cancel()
	v, err := b.store.Backlog(ctx)
	b.read = time.Now()
	if err != nil {
		b.errs.Inc()
		return b.last, b.loaded
	}
	b.last, b.loaded = v, true
	return v, true
}
