// Package ratelimit bounds requests per client address, for the HTTP
// edges that must answer people who have not proved who they are (the
// API's unsigned requests, the dashboard's failed sign-ins): each address
// has a bucket of its own, so that no client spends another's.
package ratelimit

import (
	"net"
	"net/http"
	"sync"

	"golang.org/x/time/rate"
)

// MaxAddrs bounds the addresses a PerAddr remembers; beyond it, the
// addresses whose bucket is still in use share one bucket.
const MaxAddrs = 4096

// PerAddr is one token bucket per client address.
type PerAddr struct {
	limit rate.Limit
	burst int

	mu       sync.Mutex
	addrs    map[string]*rate.Limiter
	overflow *rate.Limiter // addresses beyond MaxAddrs share it
}

// NewPerAddr makes buckets of limit per second and burst each.
func NewPerAddr(limit rate.Limit, burst int) *PerAddr {
	return &PerAddr{limit: limit, burst: burst, addrs: map[string]*rate.Limiter{}, overflow: rate.NewLimiter(limit, burst)}
}

// bucket is addr's bucket.
func (p *PerAddr) bucket(addr string) *rate.Limiter {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b := p.addrs[addr]; b != nil {
		return b
	}
	if len(p.addrs) >= MaxAddrs {
		// A full bucket is as good as a new one: forget those.
		for a, old := range p.addrs {
			if old.Tokens() >= float64(p.burst) {
				delete(p.addrs, a)
			}
		}
	}
	if len(p.addrs) >= MaxAddrs {
		return p.overflow
	}
	b := rate.NewLimiter(p.limit, p.burst)
	p.addrs[addr] = b
	return b
}

// Allow takes a token from addr's bucket.
func (p *PerAddr) Allow(addr string) bool { return p.bucket(addr).Allow() }

// Exhausted reports whether addr's bucket is empty, taking nothing: for a
// bucket that only failures spend (Allow after a failure).
func (p *PerAddr) Exhausted(addr string) bool { return p.bucket(addr).Tokens() < 1 }

// ClientAddr is the address a request came from: the connection's peer,
// never a header the client writes (behind a proxy, every client shares
// the proxy's bucket).
func ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
