package proc

import (
	"context"
	"sync"
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

// Due wakes a loop at each time work comes due, earliest first, however
// they were set, and forgets the times passed.
func TestDue(t *testing.T) {
	t.Parallel()
	var d Due
	if got := d.Wait(time.Minute); got != time.Minute {
		t.Errorf("nothing due: wait %s, want the poll", got)
	}
	now := time.Now()
	d.Set(now.Add(time.Hour))
	d.Set(now.Add(-time.Second)) // passed
	d.Set(now.Add(30 * time.Second))
	if got := d.Wait(time.Minute); got <= 0 || got > 30*time.Second {
		t.Errorf("wait %s, want the 30 s one (the passed one forgotten)", got)
	}
	if got := d.Wait(10 * time.Second); got != 10*time.Second {
		t.Errorf("wait %s, want the poll when it comes first", got)
	}
	d.at[0] = now.Add(-time.Millisecond) // the 30 s one passes
	if got := d.Wait(2 * time.Hour); got < 59*time.Minute {
		t.Errorf("wait %s, want the hour one next: a later time is not lost when an earlier passes", got)
	}
}

// Claim hands every claimed item to each, all at once, and waits for
// them; it returns how many it claimed, and a failed claim's error.
func TestClaimFansOutAndWaits(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []int
	release := make(chan struct{})
	n, err := Claim(t.Context(), func(context.Context) ([]int, error) { return []int{1, 2, 3}, nil }, func(_ context.Context, i int) {
		if i == 1 {
			close(release) // the others wait for it: all run at once
		} else {
			<-release
		}
		mu.Lock()
		got = append(got, i)
		mu.Unlock()
	})
	if n != 3 || err != nil || len(got) != 3 {
		t.Errorf("Claim = %d, %v, ran %v; want all 3 run before it returns", n, err, got)
	}
	if n, err := Claim(t.Context(), func(context.Context) ([]int, error) { return nil, context.Canceled }, func(context.Context, int) {}); n != 0 || err == nil {
		t.Errorf("a failed claim: %d, %v", n, err)
	}
}
