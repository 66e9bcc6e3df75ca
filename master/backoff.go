package master

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
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

// DecodeArgs decodes a tool call's arguments strictly: unknown fields are
// refused, so a model learns the shape instead of having its intent
// silently dropped. Its errors are written for the model.
func DecodeArgs(args string, v any) error {
	if strings.TrimSpace(args) == "" {
		args = "{}"
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("arguments are not valid JSON for this tool: %v", err)
	}
	if rest := strings.TrimSpace(args[dec.InputOffset():]); rest != "" {
		return fmt.Errorf("arguments have text after the JSON object: %q", Truncate(rest, 40))
	}
	return nil
}
