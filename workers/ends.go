package workers

import (
	"context"
	"slices"

	"github.com/callonbot/callon/master"
)

// maxEnds bounds the outcomes written in one call.
const maxEnds = 128

// ending is one outcome waiting to be written.
type ending struct {
	c   master.Completion
	res chan endResult // one result; a lead first, when handed one
}

// endResult is what a waiting outcome receives: its write's error, or
// the lead (it writes the next group, its own included).
type endResult struct {
	err  error
	lead bool
}

// end writes one task's outcome and returns the store's answer for it.
// Outcomes of tasks that end together are written together (group
// commit): the first to arrive writes at once, with every outcome queued
// meanwhile; the ones that arrive while a write is in flight wait for it
// and are written next, by the first of them. No outcome waits for more
// than the write before its own, and no goroutine is left behind.
func (p *Pool) end(ctx context.Context, c master.Completion) error {
	e := &ending{c: c, res: make(chan endResult, 1)}
	p.endMu.Lock()
	p.endQueue = append(p.endQueue, e)
	lead := !p.ending
	p.ending = true
	p.endMu.Unlock()
	if !lead {
		r := <-e.res
		if !r.lead {
			return r.err
		}
	}
	p.writeEnds(ctx)
	return (<-e.res).err
}

// writeEnds writes the queued outcomes, up to maxEnds of them, then hands
// the lead to the first outcome queued meanwhile, if any.
func (p *Pool) writeEnds(ctx context.Context) {
	p.endMu.Lock()
	n := min(len(p.endQueue), maxEnds)
	group := slices.Clone(p.endQueue[:n])
	p.endQueue = slices.Delete(p.endQueue, 0, n)
	p.endMu.Unlock()

	cs := make([]master.Completion, len(group))
	for i, e := range group {
		cs[i] = e.c
	}
	errs := p.store.CompleteTasks(ctx, cs)
	for i, e := range group {
		var err error
		if i < len(errs) {
			err = errs[i]
		}
		e.res <- endResult{err: err}
	}

	p.endMu.Lock()
	defer p.endMu.Unlock()
	if len(p.endQueue) > 0 {
		p.endQueue[0].res <- endResult{lead: true}
	} else {
		p.ending = false
	}
}
