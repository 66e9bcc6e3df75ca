package main

import (
	"log/slog"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/webhook"
)

// newWebhookSender delivers the store's webhook events to cfg.URL.
func newWebhookSender(cfg config.Webhook, st *store.Store, wake <-chan string, m master.Metrics, log *slog.Logger) *master.WebhookSender {
	post := webhook.New(cfg.URL, cfg.Secret, "callon/"+version, nil)
	return master.NewWebhookSender(master.WebhookSenderConfig{Retries: cfg.Retries, Wake: wake, Metrics: m}, st, post, log)
}
