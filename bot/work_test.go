package bot

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
)

// Gateway handlers that start work while the bot stops neither race with
// the wait for its work (run with -race) nor start anything once it is
// waited for.
func TestNoWorkStartsOnceStopping(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	b := &Bot{ctx: ctx, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var ran, late atomic.Int64
	var stopped atomic.Bool
	var handlers sync.WaitGroup
	for range 8 {
		handlers.Go(func() {
			for range 200 {
				b.goWork(0, func(context.Context) {
					ran.Add(1)
					if stopped.Load() {
						late.Add(1)
					}
				})
			}
		})
	}
	cancel()
	b.stopWork()
	stopped.Store(true)
	handlers.Wait()
	b.goWork(0, func(context.Context) { late.Add(1) })
	b.wg.Wait()
	if late.Load() != 0 {
		t.Errorf("%d pieces of work ran after the bot stopped (of %d)", late.Load(), ran.Load())
	}
}
