package main

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/tools/fetch"
	"github.com/callonbot/callon/webhook"
)

// newWebhookSender delivers the store's webhook events: to
// CALLON_WEBHOOK_URL, signed with its secret, and the events of teams
// the API started with a callback to that URL, signed with the key
// derived from the API's secret for callbacks (never a signature the API
// accepts), through a client that connects only where fetch_url may.
func newWebhookSender(cfg config.Config, st *store.Store, wake <-chan string, m master.Metrics, log *slog.Logger) (*master.WebhookSender, error) {
	post, err := newPoster(cfg)
	if err != nil {
		return nil, err
	}
	return master.NewWebhookSender(master.WebhookSenderConfig{Retries: cfg.Webhook.Retries, Wake: wake, Metrics: m}, st, post, log), nil
}

// newPoster posts events to CALLON_WEBHOOK_URL and to callbacks.
func newPoster(cfg config.Config) (master.Poster, error) {
	ua := "callon/" + version
	var r routedPoster
	if cfg.Webhook.Enabled() {
		r.endpoint = webhook.New(cfg.Webhook.URL, cfg.Webhook.Secret, ua, nil)
	}
	if cfg.API.Enabled() {
		t, err := fetch.Transport(cfg.Tools.FetchAllow)
		if err != nil {
			return nil, err
		}
		r.callback = webhook.New("", webhook.CallbackSecret(cfg.API.Secret), ua, &http.Client{Transport: t})
	}
	return r, nil
}

// routedPoster sends an event with a URL of its own (a callback) with
// callback, any other with endpoint.
type routedPoster struct {
	endpoint, callback *webhook.Poster // nil when not configured
}

func (r routedPoster) Post(ctx context.Context, ev master.WebhookEvent) (master.PostResult, error) {
	p := r.endpoint
	if ev.URL != "" {
		p = r.callback
	}
	if p == nil { // configured when the event was written, not now
		return master.PostResult{}, errNotConfigured
	}
	return p.Post(ctx, ev)
}

var errNotConfigured = errors.New("webhook: the variables for this event's destination are no longer set")
