// Package webhook posts callon's webhook events over plain net/http and
// owns the signing scheme of callon's HTTP traffic both ways: outbound
// events and the inbound API's requests are signed the Standard Webhooks
// way (webhook-id, webhook-timestamp, webhook-signature), and outbound
// events also carry the older X-Callon-Signature for a deprecation
// period. What to send and when to retry is master's WebhookSender's
// business.
package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/redact"
)

// Headers of every delivery.
const (
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256 of the body
	// keyed with the shared secret.
	//
	// Deprecated: it signs the body only, so a recorded delivery can be
	// replayed; check webhook-signature (Verify) instead. It is sent
	// until callon 2.0.
	HeaderSignature = "X-Callon-Signature"
	// HeaderEvent is the event's kind, e.g. "session.started".
	HeaderEvent = "X-Callon-Event"
	// HeaderDelivery is the event's id, the same on every retry (and the
	// body's "id").
	HeaderDelivery = "X-Callon-Delivery"
)

// Poster delivers events to one URL. It implements master.Poster.
type Poster struct {
	url       string
	secret    string
	userAgent string
	client    *http.Client
	now       func() time.Time
}

var _ master.Poster = (*Poster)(nil)

// New returns a Poster for endpoint, signing with secret. userAgent is
// sent as the User-Agent, e.g. "callon/1.2.0". A nil client means a
// client of its own; either way, redirects are not followed: a webhook
// endpoint that moved is a configuration error to show, not to guess at.
// An event with a URL of its own (a callback) goes there instead of to
// endpoint.
func New(endpoint, secret, userAgent string, client *http.Client) *Poster {
	c := &http.Client{}
	if client != nil {
		cc := *client
		c = &cc
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Poster{url: endpoint, secret: secret, userAgent: userAgent, client: c, now: time.Now}
}

// WithClock makes p stamp deliveries with now's time instead of the
// wall clock's, and read Retry-After dates against it; for tests.
func (p *Poster) WithClock(now func() time.Time) *Poster {
	p.now = now
	return p
}

// maxResponse bounds the response body read (and discarded) so the
// connection can be reused.
const maxResponse = 64 << 10

// Post sends ev's body, signed, and returns the response's status and
// Retry-After. The error, when no response came, never contains the
// URL: it may carry a token in its query or userinfo.
func (p *Poster) Post(ctx context.Context, ev master.WebhookEvent) (master.PostResult, error) {
	target := p.url
	if ev.URL != "" {
		target = ev.URL
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(ev.Body))
	if err != nil {
		return master.PostResult{}, errors.New("webhook: cannot build the request (URL not shown)")
	}
	id := strconv.FormatInt(ev.ID, 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", p.userAgent)
	req.Header.Set(HeaderEvent, string(ev.Kind))
	req.Header.Set(HeaderDelivery, id)
	req.Header.Set(HeaderSignature, Sign(p.secret, ev.Body))
	SignRequest(req.Header, p.secret, id, p.now(), ev.Body)
	resp, err := p.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the same error without the URL
		}
		return master.PostResult{}, redact.Error(fmt.Errorf("webhook: %w", err), p.secret)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	resp.Body.Close()
	return master.PostResult{Status: resp.StatusCode, RetryAfter: RetryAfter(resp.Header.Get("Retry-After"), p.now())}, nil
}

// RetryAfter reads a Retry-After value, delay-seconds or an HTTP date,
// as a duration from now; 0 when it is absent, unreadable or past.
func RetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(365*24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
