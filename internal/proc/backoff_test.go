package proc

import (
	"context"
	"testing"
	"time"
)

func TestBackoffAndJitterBounds(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 12: time.Minute} {
		for range 50 {
			if got := Backoff(n, time.Second, time.Minute); got < want/2 || got > want {
				t.Fatalf("Backoff(%d) = %s, want within [%s, %s]", n, got, want/2, want)
			}
		}
	}
	for range 50 {
		if got := Jitter(10 * time.Second); got < 8*time.Second || got > 12*time.Second {
			t.Fatalf("Jitter(10s) = %s, want within ±20%%", got)
		}
	}
	if Backoff(3, 0, 0) != 0 || Jitter(0) != 0 {
		t.Error("zero durations must stay zero")
	}
}

// Every runs its function after each wait until its context ends.
func TestEveryRunsUntilCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	n := 0
	Every(ctx, time.Millisecond, func(context.Context) {
		if n++; n == 3 {
			cancel()
		}
	})
	if n != 3 {
		t.Errorf("ran %d times, want 3 (then cancelled)", n)
	}
}
