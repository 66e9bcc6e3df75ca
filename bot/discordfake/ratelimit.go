package discordfake

import (
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"strconv"
	"time"
)

// fault is an injected failure for one call of a route.
type fault struct {
	status     int
	retryAfter time.Duration // 429 only
	// sticky faults stay until ClearFaults: an outage.
	sticky bool
	// after faults let the call do what it does, then answer status: a
	// request Discord carried out whose answer was lost.
	after bool
}

// RateLimit makes the next n calls of route answer 429 with retry_after
// set to retryAfter, as a per-route (not global) limit. discordgo sleeps
// retry_after and retries, so each 429 adds a call to Calls(route).
func (s *Server) RateLimit(route Route, n int, retryAfter time.Duration) {
	s.inject(route, n, fault{status: http.StatusTooManyRequests, retryAfter: retryAfter})
}

// Fail makes the next n calls of route answer status: 403 carries code
// 50013 (Missing Permissions), other statuses a generic body with code 0.
// discordgo retries 502 up to three times and returns other statuses as a
// *discordgo.RESTError.
func (s *Server) Fail(route Route, n int, status int) {
	s.inject(route, n, fault{status: status})
}

// Down makes every call of route answer status until ClearFaults(route):
// an outage of that endpoint.
func (s *Server) Down(route Route, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[route] = []fault{{status: status, sticky: true}}
}

// FailAfter makes the next n calls of route do what they do (a message
// is created) and then answer status, as when Discord carried a request
// out but its answer never reached the caller.
func (s *Server) FailAfter(route Route, n int, status int) {
	s.inject(route, n, fault{status: status, after: true})
}

// ClearFaults drops the faults and rate limits still pending on route,
// and ends its outage (Down).
func (s *Server) ClearFaults(route Route) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.faults, route)
}

func (s *Server) inject(route Route, n int, f fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.faults[route] = append(s.faults[route], f)
	}
}

func (s *Server) popFaultLocked(route Route) (fault, bool) {
	q := s.faults[route]
	if len(q) == 0 {
		return fault{}, false
	}
	if !q[0].sticky {
		s.faults[route] = q[1:]
	}
	return q[0], true
}

// Calls returns how many requests route has received, failed and rate
// limited ones included.
func (s *Server) Calls(route Route) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[route]
}

// UnknownCalls returns the requests that matched no route, as
// "METHOD /path", in arrival order.
func (s *Server) UnknownCalls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.unknown...)
}

// setRateLimitHeaders adds Discord's rate-limit headers. Without a 429 the
// bucket always has calls left, so discordgo never waits on its own.
func setRateLimitHeaders(h http.Header, route Route, f *fault) {
	sum := fnv.New64a()
	_, _ = sum.Write([]byte(route))
	resetAfter, remaining := time.Second, "4"
	if f != nil && f.status == http.StatusTooManyRequests {
		resetAfter, remaining = f.retryAfter, "0"
	}
	h.Set("X-RateLimit-Limit", "5")
	h.Set("X-RateLimit-Remaining", remaining)
	h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(time.Now().Add(resetAfter).UnixMilli())/1000, 'f', 3, 64))
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(resetAfter.Seconds(), 'f', 3, 64))
	h.Set("X-RateLimit-Bucket", fmt.Sprintf("%016x", sum.Sum64()))
}

func (f fault) write(w http.ResponseWriter) {
	switch f.status {
	case http.StatusTooManyRequests:
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(f.retryAfter.Seconds()))))
		w.Header().Set("X-RateLimit-Scope", "user")
		writeJSON(w, f.status, map[string]any{
			"message":     "You are being rate limited.",
			"retry_after": f.retryAfter.Seconds(),
			"global":      false,
		})
	case http.StatusForbidden:
		writeError(w, errMissingPermissions())
	default:
		writeError(w, &apiError{status: f.status, Message: fmt.Sprintf("%d: %s", f.status, http.StatusText(f.status))})
	}
}
