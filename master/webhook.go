package master

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/callonbot/callon/internal/proc"
)

// WebhookEventKind names an event callon tells an outside dispatcher about.
type WebhookEventKind string

// Webhook events. Each is written in the transaction of the state change
// it describes, so it is sent for every change and only for those.
const (
	WebhookSessionStarted   WebhookEventKind = "session.started"   // a team started
	WebhookSessionReported  WebhookEventKind = "session.reported"  // a team reported to its report_to channel
	WebhookSessionBlocked   WebhookEventKind = "session.blocked"   // the master told the user about a blocked task
	WebhookSessionDissolved WebhookEventKind = "session.dissolved" // a team was dissolved
)

// WebhookEvent is one event to deliver.
type WebhookEvent struct {
	ID        int64
	SessionID int64
	Kind      WebhookEventKind
	// Body is the JSON sent, byte for byte the same on every attempt; it
	// carries ID so a receiver can recognise a retry.
	Body []byte
	// Attempt numbers this delivery, from 1. It is counted when the event
	// is claimed, so an attempt cut short by a crash still counts.
	Attempt int
	// URL is where this event goes when it is not the deployment's
	// webhook endpoint: the callback URL of a team started through the
	// API. "" for the endpoint.
	URL string
}

// WebhookResult is how one delivery attempt ended.
type WebhookResult struct {
	EventID int64
	Attempt int    // the attempt it answers; a stale one changes nothing
	Status  int    // the receiver's HTTP status; 0 when none came
	Error   string // why it failed; "" when delivered
	// Delivered: the receiver took it (2xx). Failed: given up, the error
	// being permanent or the retries spent. Neither: retried after RetryIn.
	Delivered bool
	Failed    bool
	RetryIn   time.Duration
	// Interrupted: callon stopped during the attempt. The event is due
	// again at once and the attempt is not counted; no signal is written.
	Interrupted bool
}

// WebhookStore is what the webhook sender needs from Postgres.
type WebhookStore interface {
	// ClaimWebhooks leases up to n due pending events for lease, counting
	// an attempt on each.
	ClaimWebhooks(ctx context.Context, n int, lease time.Duration) ([]WebhookEvent, error)
	// RecordWebhook records an attempt's outcome with a WEBHOOK signal on
	// the event's session, in one transaction. ErrStale when the event
	// was claimed again since, or is no longer pending.
	RecordWebhook(ctx context.Context, r WebhookResult) error
}

// PostResult is a receiver's answer to one delivery.
type PostResult struct {
	Status int // the HTTP status
	// RetryAfter is the receiver's Retry-After, as a delay; 0 when it
	// gave none.
	RetryAfter time.Duration
}

// Poster sends an event's body to the webhook endpoint (or to the
// event's URL). It returns the receiver's answer, or an error when none
// came.
type Poster interface {
	Post(ctx context.Context, ev WebhookEvent) (PostResult, error)
}

// MaxRetryAfter bounds how long a receiver's Retry-After may hold an
// event back.
const MaxRetryAfter = time.Hour

// WebhookSenderConfig tunes the webhook sender. Zero values take the
// defaults, except Retries, where 0 means no retry.
type WebhookSenderConfig struct {
	Retries   int           // retries after the first attempt
	Batch     int           // events claimed (and posted in parallel) at once
	Timeout   time.Duration // one POST
	Lease     time.Duration // a claim's lease; longer than Timeout
	Poll      time.Duration // retries come due by time: look this often
	RetryBase time.Duration // the first retry's delay; it doubles each time
	RetryMax  time.Duration // the longest delay between attempts
	Wake      <-chan string // new events come with a wake-up
	Metrics   Metrics       // nil: NoMetrics
}

func (c WebhookSenderConfig) withDefaults() WebhookSenderConfig {
	c.Retries = max(c.Retries, 0)
	c.Batch = cmp.Or(c.Batch, 8)
	c.Timeout = cmp.Or(c.Timeout, 10*time.Second)
	c.Lease = max(cmp.Or(c.Lease, time.Minute), c.Timeout+10*time.Second)
	c.Poll = cmp.Or(c.Poll, time.Second)
	c.RetryBase = cmp.Or(c.RetryBase, time.Second)
	c.RetryMax = cmp.Or(c.RetryMax, 5*time.Minute)
	if c.Metrics == nil {
		c.Metrics = NoMetrics{}
	}
	return c
}

// WebhookSender delivers webhook events from their durable table, in its
// own loop: a slow or failing receiver delays nothing but its events.
type WebhookSender struct {
	cfg   WebhookSenderConfig
	store WebhookStore
	post  Poster
	log   *slog.Logger
}

// NewWebhookSender returns a sender; Run starts it.
func NewWebhookSender(cfg WebhookSenderConfig, store WebhookStore, post Poster, logger *slog.Logger) *WebhookSender {
	return &WebhookSender{cfg: cfg.withDefaults(), store: store, post: post, log: logger.With("component", "webhook")}
}

// Run delivers due events until ctx ends.
func (s *WebhookSender) Run(ctx context.Context) error {
	proc.Drain(ctx, s.Flush, s.cfg.Batch, s.cfg.Poll, s.cfg.Wake, nil, s.log, "claim webhook events")
	return nil
}

// Flush claims one batch of due events and delivers them in parallel. It
// returns how many it claimed.
func (s *WebhookSender) Flush(ctx context.Context) (int, error) {
	return proc.Claim(ctx, func(ctx context.Context) ([]WebhookEvent, error) {
		return s.store.ClaimWebhooks(ctx, s.cfg.Batch, s.cfg.Lease)
	}, s.deliver)
}

// deliver makes one attempt at ev and records how it went.
func (s *WebhookSender) deliver(ctx context.Context, ev WebhookEvent) {
	r := WebhookResult{EventID: ev.ID, Attempt: ev.Attempt}
	if ev.Attempt > s.cfg.Retries+1 {
		// The previous claim's process died while posting the last attempt.
		r.Failed, r.Error = true, "no attempt left (the last one was interrupted)"
	} else {
		pctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
		res, err := s.post.Post(pctx, ev)
		cancel()
		r = s.judge(ev, res, err)
		if err != nil && ctx.Err() != nil {
			r = WebhookResult{EventID: ev.ID, Attempt: ev.Attempt, Interrupted: true}
		}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err := s.store.RecordWebhook(wctx, r)
	switch {
	case errors.Is(err, ErrStale):
		s.log.Debug("webhook event claimed again meanwhile", "event_id", ev.ID, "session_id", ev.SessionID, "attempt", ev.Attempt)
	case err != nil:
		s.log.Error("record webhook delivery", "event_id", ev.ID, "session_id", ev.SessionID, "err", err)
	}
	attrs := []any{"event_id", ev.ID, "event", ev.Kind, "session_id", ev.SessionID, "attempt", ev.Attempt, "status", r.Status}
	switch {
	case r.Delivered:
		s.cfg.Metrics.WebhookDelivered("delivered")
		s.log.Debug("webhook delivered", attrs...)
	case r.Interrupted:
		s.cfg.Metrics.WebhookDelivered("interrupted")
		s.log.Debug("webhook attempt interrupted", attrs...)
	case r.Failed:
		s.cfg.Metrics.WebhookDelivered("failed")
		s.log.Error("webhook given up", append(attrs, "err", r.Error)...)
	default:
		s.cfg.Metrics.WebhookDelivered("retry")
		s.log.Warn("webhook attempt failed; retrying", append(attrs, "err", r.Error, "retry_in", r.RetryIn)...)
	}
}

// judge turns a POST's outcome into a result: delivered on 2xx; retried
// after a network error, 408, 429 or 5xx while retries remain; otherwise
// given up (any other status, redirects included, is the receiver saying
// no, and asking again would not change its mind). A retry waits at
// least the receiver's Retry-After, up to MaxRetryAfter.
func (s *WebhookSender) judge(ev WebhookEvent, res PostResult, err error) WebhookResult {
	status := res.Status
	r := WebhookResult{EventID: ev.ID, Attempt: ev.Attempt, Status: status}
	retryable := true
	switch {
	case err != nil:
		r.Error = err.Error()
	case status >= 200 && status < 300:
		r.Delivered = true
		return r
	default:
		r.Error = "HTTP " + strconv.Itoa(status)
		retryable = RetryableStatus(status)
	}
	if !retryable || ev.Attempt > s.cfg.Retries {
		r.Failed = true
		return r
	}
	r.RetryIn = max(proc.Backoff(ev.Attempt, s.cfg.RetryBase, s.cfg.RetryMax), min(res.RetryAfter, MaxRetryAfter))
	return r
}

// RetryableStatus reports whether a webhook receiver's answer may change
// on a later attempt: 408, 429 and 5xx.
func RetryableStatus(status int) bool {
	return status == 408 || status == 429 || status >= 500
}
