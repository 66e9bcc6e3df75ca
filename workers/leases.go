package workers

import (
	"context"
	"fmt"
	"time"

	"github.com/callonbot/callon/master"
)

// keepLeases extends the leases of every running task in one statement
// each Heartbeat, and checks them (one read) when a wake asks, until ctx
// is done. A task found no longer ours (cancelled, or swept and claimed
// elsewhere) is stopped.
//
// Its store calls never share a context with a task: a task that ends
// while its lease is being extended does not cancel the statement, and
// a cancelled statement costs pgx its connection.
func (p *Pool) keepLeases(ctx context.Context) {
	tick := time.NewTicker(p.cfg.Heartbeat)
	defer tick.Stop()
	for {
		var extend bool
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			extend = true
		case <-p.checkNow:
		}
		rs := p.snapshot()
		if len(rs) == 0 {
			continue
		}
		refs := make([]master.TaskRef, len(rs))
		for i, r := range rs {
			refs[i] = master.TaskRef{ID: r.task.ID, Attempt: r.task.Attempt}
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		var stale []int64
		var err error
		if extend {
			stale, err = p.store.ExtendLeases(sctx, refs, p.cfg.Lease)
		} else {
			stale, err = p.store.StaleTasks(sctx, refs)
		}
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				// A lease may run out; then the sweeper requeues the task
				// and the next extension finds it stale.
				p.logger.Warn("lease extension failed", "err", err, "tasks", len(refs))
			}
			continue
		}
		gone := make(map[int64]bool, len(stale))
		for _, id := range stale {
			gone[id] = true
		}
		for _, r := range rs {
			if gone[r.task.ID] {
				r.cancel(fmt.Errorf("lease of task %d attempt %d: %w", r.task.ID, r.task.Attempt, master.ErrStale))
			}
		}
	}
}

// snapshot lists the running tasks.
func (p *Pool) snapshot() []*running {
	p.mu.Lock()
	defer p.mu.Unlock()
	rs := make([]*running, 0, len(p.running))
	for _, r := range p.running {
		rs = append(rs, r)
	}
	return rs
}
