package api

import (
	"errors"
	"net"
	"net/http"
	"sync"

	"golang.org/x/time/rate"

	"github.com/callonbot/callon/webhook"
)

// limits are the API's rate bounds, applied once a request's signature
// was checked: one bucket per authenticated caller, and a small one per
// address for requests that fail the check (unsigned, forged, stale), so
// that no amount of those can cost a signed caller a request.
type limits struct {
	caller       rate.Limit
	callerBurst  int
	unsigned     rate.Limit
	unsignedBurn int

	mu       sync.Mutex
	callers  map[string]*rate.Limiter
	addrs    map[string]*rate.Limiter
	overflow *rate.Limiter // addresses beyond maxAddrs share it
}

// maxAddrs bounds the addresses remembered; beyond it, the addresses
// whose bucket is still in use share one bucket.
const maxAddrs = 4096

func newLimits(perMinute, burst, unsignedPerMinute, unsignedBurst int) *limits {
	l := &limits{
		caller: rate.Limit(float64(perMinute) / 60), callerBurst: burst,
		unsigned: rate.Limit(float64(unsignedPerMinute) / 60), unsignedBurn: unsignedBurst,
		callers: map[string]*rate.Limiter{}, addrs: map[string]*rate.Limiter{},
	}
	l.overflow = rate.NewLimiter(l.unsigned, l.unsignedBurn)
	return l
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

// allowUnsigned takes a request that failed the signature check from its
// address's bucket.
func (l *limits) allowUnsigned(addr string) bool {
	l.mu.Lock()
	b := l.addrs[addr]
	if b == nil {
		if len(l.addrs) >= maxAddrs {
			// A full bucket is as good as a new one: forget those.
			for a, old := range l.addrs {
				if old.Tokens() >= float64(l.unsignedBurn) {
					delete(l.addrs, a)
				}
			}
		}
		if len(l.addrs) < maxAddrs {
			b = rate.NewLimiter(l.unsigned, l.unsignedBurn)
			l.addrs[addr] = b
		} else {
			b = l.overflow
		}
	}
	l.mu.Unlock()
	return b.Allow()
}

// clientAddr is the address a request came from: the connection's peer,
// never a header the client writes (behind a proxy, every unsigned
// request shares the proxy's bucket, which signed callers do not use).
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// refuseUnsigned answers a request that failed the signature check:
// 401 with what is wrong, or 429 once its address has had its share.
func (h *Handler) refuseUnsigned(w http.ResponseWriter, r *http.Request, err error) {
	if !h.limits.allowUnsigned(clientAddr(r)) {
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
