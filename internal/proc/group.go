package proc

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Group writes items that arrive together in one write (group commit):
// the first item to arrive is written at once, with every item queued
// meanwhile; items that arrive while a write is in flight wait for it
// and are written in the next write, led by the first of them. No item
// waits for more than the write before its own, no write carries more
// than Max items, and no goroutine is left behind: the caller whose item
// leads a write makes it.
//
// Write must return exactly one result per item, in order (Do panics
// otherwise); a write that fails as a whole says so in each item's result. Do waits for its item's result
// whatever becomes of ctx, so that a write made for it (a hold granted, an
// outcome recorded) is never unknown to its caller: Write must bound its
// own time.
type Group[T, R any] struct {
	// Max bounds the items of one write; 0 or less means 64.
	Max int
	// Write writes items together and returns their results in order.
	// Its ctx is the leading caller's.
	Write func(ctx context.Context, items []T) []R

	mu    sync.Mutex
	queue []*groupItem[T, R]
	busy  bool
}

// groupItem is one item waiting to be written.
type groupItem[T, R any] struct {
	item T
	res  chan groupResult[R] // one result; a lead first, when handed one
}

// groupResult is what a waiting item receives: its result, or the lead
// (it writes the next group, its own item included).
type groupResult[R any] struct {
	r    R
	lead bool
}

// Do writes item, together with the items that arrive with it, and
// returns its result.
func (g *Group[T, R]) Do(ctx context.Context, item T) R {
	e := &groupItem[T, R]{item: item, res: make(chan groupResult[R], 1)}
	g.mu.Lock()
	g.queue = append(g.queue, e)
	lead := !g.busy
	g.busy = true
	g.mu.Unlock()
	if !lead {
		r := <-e.res
		if !r.lead {
			return r.r
		}
	}
	g.write(ctx)
	return (<-e.res).r
}

// write writes the queued items, up to Max of them, then hands the lead
// to the first item queued meanwhile, if any.
func (g *Group[T, R]) write(ctx context.Context) {
	limit := g.Max
	if limit <= 0 {
		limit = 64
	}
	g.mu.Lock()
	n := min(len(g.queue), limit)
	group := slices.Clone(g.queue[:n])
	g.queue = slices.Delete(g.queue, 0, n)
	g.mu.Unlock()

	items := make([]T, len(group))
	for i, e := range group {
		items[i] = e.item
	}
	rs := g.Write(ctx, items)
	if len(rs) != len(items) {
		// A result made up for an item would be a lie (a zero error
		// says "written"): a Write that miscounts is a bug.
		panic(fmt.Sprintf("proc: Group.Write returned %d results for %d items", len(rs), len(items)))
	}
	for i, e := range group {
		e.res <- groupResult[R]{r: rs[i]}
	}

	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) > 0 {
		g.queue[0].res <- groupResult[R]{lead: true}
	} else {
		g.busy = false
	}
}
