package proc

import (
	"math/rand/v2"
	"time"
)

// Backoff is the wait after n (≥ 1) failures in a row: exponential from
// lo, capped at hi, of which the upper half is random, so processes that
// failed together do not retry together.
func Backoff(n int, lo, hi time.Duration) time.Duration {
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// Jitter returns d ± 20%, so pollers started together drift apart.
func Jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - d/5 + rand.N(d*2/5+1)
}
