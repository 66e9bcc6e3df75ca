package api

import (
	"errors"
	"net/http"
	"sync"

	"golang.org/x/time/rate"

	"github.com/callonbot/callon/internal/ratelimit"
	"github.com/callonbot/callon/webhook"
)

// limits are the API's rate bounds, applied once a request's signature
// was checked: one bucket per authenticated caller, and a small one per
// address for requests that fail the check (unsigned, forged, stale), so
// that no amount of those can cost a signed caller a request.
type limits struct {
	caller      rate.Limit
	callerBurst int
	unsigned    *ratelimit.PerAddr

	mu      sync.Mutex
	callers map[string]*rate.Limiter
}

func newLimits(perMinute, burst, unsignedPerMinute, unsignedBurst int) *limits {
	return &limits{
		caller: rate.Limit(float64(perMinute) / 60), callerBurst: burst,
		unsigned: ratelimit.NewPerAddr(rate.Limit(float64(unsignedPerMinute)/60), unsignedBurst),
		callers:  map[string]*rate.Limiter{},
	}
}

// allowCaller takes a request from the bucket of an authenticated caller.
func (l *limits) allowCaller(caller string) bool {
	l.mu.Lock()
	b := l.callers[caller]
	if b == nil {
		b = rate.NewLimiter(l.caller, l.callerBurst)
		l.callers[caller] = b
	}
	l.mu.Unlock()
	return b.Allow()
}

// refuseUnsigned answers a request that failed the signature check:
// 401 with what is wrong, or 429 once its address has had its share.
func (h *Handler) refuseUnsigned(w http.ResponseWriter, r *http.Request, err error) {
	if !h.limits.unsigned.Allow(ratelimit.ClientAddr(r)) {
		w.Header().Set("Retry-After", "60")
		writeError(w, http.StatusTooManyRequests, CodeRateLimited, "Too many requests that are not correctly signed from this address; try again in a minute.")
		return
	}
	if errors.Is(err, webhook.ErrTimestamp) {
		writeError(w, http.StatusUnauthorized, CodeStaleTimestamp,
			"webhook-timestamp is unreadable or more than 5 minutes away from callon's clock; sign each request when you send it (and check your clock).")
		return
	}
	writeError(w, http.StatusUnauthorized, CodeUnauthorized,
		"The request is not signed with CALLON_API_SECRET: sign \"<METHOD> <path>\\n<body>\" (the path with its query, as callon receives it) "+
			"with the webhook-id and webhook-timestamp, the Standard Webhooks way (see docs/api.md).")
}
