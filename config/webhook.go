package config

import (
	"cmp"
	"fmt"
	"net/url"
	"strings"

	scrub "github.com/callonbot/callon/redact"
)

// DefaultWebhookRetries is how many times a failed webhook delivery is
// retried after the first attempt.
const DefaultWebhookRetries = 5

// Webhook is where callon posts its events for outside dispatchers.
type Webhook struct {
	URL     string // CALLON_WEBHOOK_URL: "" disables webhooks; may carry a token, never print it raw
	Secret  string // CALLON_WEBHOOK_SECRET: HMAC-SHA256 key of X-Callon-Signature; secret
	Retries int    // CALLON_WEBHOOK_RETRIES: retries after the first attempt
}

// Enabled reports whether events are posted.
func (w Webhook) Enabled() bool { return w.URL != "" }

func (p *parser) webhook() Webhook {
	w := Webhook{
		URL:     strings.TrimSpace(p.getenv("CALLON_WEBHOOK_URL")),
		Secret:  p.getenv("CALLON_WEBHOOK_SECRET"), // verbatim: it is a key
		Retries: p.int("CALLON_WEBHOOK_RETRIES", DefaultWebhookRetries, 0, 20),
	}
	if w.URL == "" {
		return w
	}
	// The value may hold a token: describe what is wrong, never echo it.
	if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.fail("CALLON_WEBHOOK_URL", "must be an http:// or https:// URL (value not shown)")
		w.URL = ""
	}
	if strings.TrimSpace(w.Secret) == "" {
		p.fail("CALLON_WEBHOOK_SECRET", "is required when CALLON_WEBHOOK_URL is set: receivers check X-Callon-Signature with it")
	}
	return w
}

// String describes the webhook settings with the secret, and any
// userinfo or query of the URL, redacted.
func (w Webhook) String() string {
	return fmt.Sprintf("webhook_url=%s webhook_secret=%s webhook_retries=%d", cmp.Or(scrub.URL(w.URL), "(unset)"), redact(w.Secret), w.Retries)
}
