package proc

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// TestGroupWritesWhatArrivesTogether: while one write is in flight, the
// items that arrive wait and are then written in one write, led by one
// of them, each getting its own result; then the group is idle.
func TestGroupWritesWhatArrivesTogether(t *testing.T) {
	t.Parallel()
	const waiting = 5
	inFlight, letGo := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var writes [][]int
	errOdd := errors.New("odd")
	g := &Group[int, error]{Write: func(_ context.Context, items []int) []error {
		mu.Lock()
		writes = append(writes, items)
		first := len(writes) == 1
		mu.Unlock()
		if first {
			close(inFlight)
			<-letGo
		}
		errs := make([]error, len(items))
		for i, n := range items {
			if n%2 == 1 {
				errs[i] = fmt.Errorf("item %d: %w", n, errOdd)
			}
		}
		return errs
	}}

	errs := make([]error, waiting+1)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = g.Do(t.Context(), 0) })
	<-inFlight
	for i := range waiting {
		wg.Go(func() { errs[i+1] = g.Do(t.Context(), i+1) })
	}
	for queued := 0; queued < waiting; runtime.Gosched() {
		g.mu.Lock()
		queued = len(g.queue)
		g.mu.Unlock()
	}
	close(letGo)
	wg.Wait()

	if len(writes) != 2 || len(writes[0]) != 1 || len(writes[1]) != waiting {
		t.Fatalf("got writes %v, want [0] then the %d that waited, together", writes, waiting)
	}
	for n, err := range errs {
		if odd := errors.Is(err, errOdd); odd != (n%2 == 1) || (!odd && err != nil) {
			t.Errorf("item %d: got %v, want its own result (odd: %v)", n, err, n%2 == 1)
		}
	}
	if g.busy || len(g.queue) > 0 {
		t.Errorf("after the writes: busy %v with %d queued, want idle", g.busy, len(g.queue))
	}
}

// TestGroupBoundsAWrite: items beyond Max wait for the next write, and
// every item is written exactly once.
func TestGroupBoundsAWrite(t *testing.T) {
	t.Parallel()
	const items, limit = 50, 4
	var mu sync.Mutex
	seen := map[int]int{}
	most := 0
	g := &Group[int, int]{Max: limit, Write: func(_ context.Context, in []int) []int {
		mu.Lock()
		defer mu.Unlock()
		most = max(most, len(in))
		for _, n := range in {
			seen[n]++
		}
		return in
	}}
	var wg sync.WaitGroup
	for i := range items {
		wg.Go(func() {
			if got := g.Do(context.Background(), i); got != i {
				t.Errorf("item %d got result %d", i, got)
			}
		})
	}
	wg.Wait()
	if most > limit {
		t.Errorf("a write carried %d items, want at most %d", most, limit)
	}
	for i := range items {
		if seen[i] != 1 {
			t.Errorf("item %d written %d times, want once", i, seen[i])
		}
	}
}

// TestGroupRefusesAMiscountedWrite: a Write that returns fewer results
// than items is a bug, not a success for the others.
func TestGroupRefusesAMiscountedWrite(t *testing.T) {
	t.Parallel()
	g := &Group[int, error]{Write: func(context.Context, []int) []error { return nil }}
	defer func() {
		if recover() == nil {
			t.Error("a write with no results for its item went unnoticed")
		}
	}()
	g.Do(context.Background(), 1)
}
