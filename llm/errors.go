package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	scrub "github.com/callonbot/callon/redact"
)

// StatusError is an HTTP error answer from the server.
type StatusError struct {
	Status int
	// Message is the server's error message (the API key removed).
	Message string
	// RetryAfter is how long the server asked us to wait, if it did.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("status %d %s", e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("status %d: %s", e.Status, e.Message)
}

func (e *StatusError) retryAfter() time.Duration {
	if e == nil {
		return 0
	}
	return e.RetryAfter
}

func (e *StatusError) status() int {
	if e == nil {
		return 0
	}
	return e.Status
}

// transientError is a failure to get any answer: a network error or an
// attempt that timed out.
type transientError struct{ err error }

func (e *transientError) Error() string { return e.err.Error() }
func (e *transientError) Unwrap() error { return e.err }

// IsRetryable reports whether err is a failure that may pass if the call
// is made again later: a rate limit (429), a request timeout (408), a
// server error (5xx), a network failure or an attempt that timed out.
// Chat has already retried such failures up to Config.MaxRetries when it
// returns one; a caller can still requeue its work rather than fail it.
// Cancellation, the caller's own deadline and other 4xx answers are not
// retryable.
func IsRetryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return retryableStatus(se.Status)
	}
	var te *transientError
	return errors.As(err, &te)
}

// message extracts the server's error message from a go-openai error.
func (c *Client) message(err error) string {
	var msg string
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr):
		msg = apiErr.Message
	case errors.As(err, &reqErr):
		// Not an OpenAI error object: a proxy's page or plain text.
		msg = strings.Join(strings.Fields(string(reqErr.Body)), " ")
		if r := []rune(msg); len(r) > 200 {
			msg = string(r[:200]) + "…"
		}
	default:
		msg = err.Error()
	}
	return scrub.Text(msg, c.key)
}

const redacted = scrub.Mask

// redact returns err with the key, and any secret of the kinds package
// redact knows (an URL's userinfo or query, tokens), masked.
func redact(err error, key string) error { return scrub.Error(err, key) }
