package workers

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/callonbot/callon/master"
)

// TestOutcomesEndingTogetherAreWrittenTogether: while one write is in
// flight, the outcomes that arrive wait and are then written in one call,
// each getting its own answer.
func TestOutcomesEndingTogetherAreWrittenTogether(t *testing.T) {
	t.Parallel()
	const waiting = 5
	inFlight, letGo := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var calls [][]int64
	store := &fakeStore{}
	p := New(Config{ID: "w1", SweepEvery: -1}, store, &fakeLLM{}, discard())
	// CompleteTasks is the fake's: wrap it to see the groups.
	store.CompleteTaskFunc = func(_ context.Context, id int64, attempt int, _ master.Outcome) (master.Task, error) {
		if id%2 == 0 {
			return master.Task{}, fmt.Errorf("task %d attempt %d: %w", id, attempt, master.ErrStale)
		}
		return master.Task{ID: id}, nil
	}
	grouped := &groupingStore{fakeStore: store, groups: func(cs []master.Completion) {
		ids := make([]int64, len(cs))
		for i, c := range cs {
			ids[i] = c.Task.ID
		}
		mu.Lock()
		calls = append(calls, ids)
		first := len(calls) == 1
		mu.Unlock()
		if first {
			close(inFlight)
			<-letGo
		}
	}}
	p.store = grouped

	errs := make([]error, waiting+1)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = p.end(t.Context(), doneOutcome(1)) })
	<-inFlight
	for i := range waiting {
		wg.Go(func() { errs[i+1] = p.end(t.Context(), doneOutcome(int64(i+2))) })
	}
	for queued := 0; queued < waiting; runtime.Gosched() {
		p.endMu.Lock()
		queued = len(p.endQueue)
		p.endMu.Unlock()
	}
	close(letGo)
	wg.Wait()

	if len(calls) != 2 || len(calls[0]) != 1 || len(calls[1]) != waiting {
		t.Fatalf("got writes %v, want [1] then the %d that waited, together", calls, waiting)
	}
	for i, err := range errs {
		id := int64(i + 1)
		if stale := errors.Is(err, master.ErrStale); stale != (id%2 == 0) || (!stale && err != nil) {
			t.Errorf("task %d: got %v, want its own answer (stale: %v)", id, err, id%2 == 0)
		}
	}
	if p.ending || len(p.endQueue) > 0 {
		t.Errorf("after the writes: ending %v with %d queued, want idle", p.ending, len(p.endQueue))
	}
}

func doneOutcome(id int64) master.Completion {
	return master.Completion{Task: master.TaskRef{ID: id, Attempt: 1}, Outcome: master.Outcome{State: master.TaskDone}}
}

// groupingStore reports each CompleteTasks call's group before writing it.
type groupingStore struct {
	*fakeStore
	groups func([]master.Completion)
}

func (g *groupingStore) CompleteTasks(ctx context.Context, cs []master.Completion) []error {
	g.groups(cs)
	return g.fakeStore.CompleteTasks(ctx, cs)
}
