package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// maxRetryAfter caps how long a server's Retry-After can make us wait when
// it asks for more than MaxBackoff.
const maxRetryAfter = 60 * time.Second

// exchange is what capture saw of one attempt's HTTP exchange. go-openai
// turns an error response into an error without its headers, so capture
// keeps them (for Retry-After) where the attempt can read them.
type exchange struct {
	status int
	header http.Header
	err    error // transport error: no response at all
}

type exchangeKey struct{}

// capture is go-openai's HTTP client: it records the exchange of a request
// whose context carries an *exchange.
type capture struct{ hc *http.Client }

func (c capture) Do(r *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(r)
	if x, ok := r.Context().Value(exchangeKey{}).(*exchange); ok {
		if err != nil {
			x.err = err
		} else {
			x.status, x.header = resp.StatusCode, resp.Header
		}
	}
	return resp, err
}

// retry runs fn until it succeeds, fails for good, or has been retried
// MaxRetries times; it returns how many attempts it made. Waits between
// attempts end early when ctx does, and cancellation is never retried.
func (c *Client) retry(ctx context.Context, op string, fn func(context.Context) error) (int, error) {
	for attempt := 1; ; attempt++ {
		err := c.attempt(ctx, fn)
		if err == nil {
			return attempt, nil
		}
		if ctx.Err() != nil {
			return attempt, ctx.Err()
		}
		if !IsRetryable(err) || attempt > c.cfg.MaxRetries {
			return attempt, err
		}
		var se *StatusError
		errors.As(err, &se)
		wait := c.backoff(attempt, se.retryAfter())
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			// Waiting would outlive the caller; the server's error says more
			// than a deadline would.
			return attempt, err
		}
		c.logger.WarnContext(ctx, "llm call failed, retrying", "op", op, "attempt", attempt,
			"status", se.status(), "wait", wait, "err", redact(err, c.key))
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return attempt, ctx.Err()
		}
	}
}

// attempt makes one call within a concurrency slot and the per-attempt
// timeout, and classifies its failure: a *StatusError for an HTTP error, a
// transient error for a timeout or a network failure.
func (c *Client) attempt(ctx context.Context, fn func(context.Context) error) error {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.sem }()

	actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	x := &exchange{}
	err := fn(context.WithValue(actx, exchangeKey{}, x))
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case x.status >= http.StatusBadRequest:
		return &StatusError{Status: x.status, Message: c.message(err), RetryAfter: retryAfterOf(x.header, time.Now())}
	case actx.Err() != nil:
		return &transientError{fmt.Errorf("no answer within %v", c.cfg.Timeout)}
	case x.err != nil:
		return &transientError{x.err}
	}
	// The server answered 2xx but the body broke off or could not be read.
	var netErr net.Error
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &netErr) {
		return &transientError{err}
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) && apiErr.HTTPStatusCode >= http.StatusBadRequest {
		return &StatusError{Status: apiErr.HTTPStatusCode, Message: c.message(err)}
	}
	return err
}

// backoff is the wait before retrying after attempt (1-based): what the
// server asked for, capped, or else exponential with full jitter.
func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, max(c.cfg.MaxBackoff, maxRetryAfter))
	}
	ceiling := c.cfg.MaxBackoff
	if shift := attempt - 1; shift < 32 {
		ceiling = min(ceiling, c.cfg.MinBackoff<<shift)
	}
	return rand.N(ceiling + 1)
}

// retryAfterOf reads how long the server asked us to wait: OpenAI's
// retry-after-ms, else Retry-After in seconds or as an HTTP date.
func retryAfterOf(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return max(time.Duration(s*float64(time.Second)), 0)
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// retryableStatus reports whether a request that got this status may
// succeed if sent again.
func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}
