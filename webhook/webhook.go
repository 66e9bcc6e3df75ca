// Package webhook posts callon's webhook events to an outside dispatcher
// over plain net/http, signed with HMAC-SHA256. It owns the wire format of
// a delivery (headers and signature); what to send and when to retry is
// master's WebhookSender's business.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/callonbot/callon/master"
)

// Headers of every delivery.
const (
	// HeaderSignature is "sha256=" and the hex HMAC-SHA256 of the body
	// keyed with the shared secret.
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
}

var _ master.Poster = (*Poster)(nil)

// New returns a Poster for endpoint, signing with secret. userAgent is
// sent as the User-Agent, e.g. "callon/1.2.0". A nil client means a
// client of its own; either way, redirects are not followed: a webhook
// endpoint that moved is a configuration error to show, not to guess at.
func New(endpoint, secret, userAgent string, client *http.Client) *Poster {
	c := &http.Client{}
	if client != nil {
		cc := *client
		c = &cc
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Poster{url: endpoint, secret: secret, userAgent: userAgent, client: c}
}

// Sign returns the X-Callon-Signature value of body under secret.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether signature (an X-Callon-Signature value) is
// body's under secret, in constant time. For receivers written in Go.
func Verify(secret string, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(strings.TrimSpace(signature)))
}

// maxResponse bounds the response body read (and discarded) so the
// connection can be reused.
const maxResponse = 64 << 10

// Post sends ev's body, signed, and returns the response's status. The
// error, when no response came, never contains the URL: it may carry a
// token in its query or userinfo.
func (p *Poster) Post(ctx context.Context, ev master.WebhookEvent) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(ev.Body))
	if err != nil {
		return 0, errors.New("webhook: cannot build the request (URL not shown)")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", p.userAgent)
	req.Header.Set(HeaderEvent, string(ev.Kind))
	req.Header.Set(HeaderDelivery, strconv.FormatInt(ev.ID, 10))
	req.Header.Set(HeaderSignature, Sign(p.secret, ev.Body))
	resp, err := p.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the same error without the URL
		}
		return 0, fmt.Errorf("webhook: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponse))
	resp.Body.Close()
	return resp.StatusCode, nil
}
