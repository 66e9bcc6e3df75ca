package bot

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func stoppableBot(grace time.Duration) (*Bot, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	b := &Bot{ctx: ctx, cfg: Config{ShutdownGrace: grace}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	b.work, b.stopAll = context.WithCancel(context.WithoutCancel(ctx))
	return b, cancel
}

// Handlers admitted before the bot stops have their work run to the end
// and waited for, however late they start it, with a context the stop
// does not cancel; none is admitted once the bot stops (run with -race:
// the admissions do not race with the wait).
func TestStopWaitsForAdmittedWork(t *testing.T) {
	t.Parallel()
	b, cancel := stoppableBot(time.Hour)
	var admitted, ran atomic.Int64
	var handlers sync.WaitGroup
	for range 8 {
		handlers.Go(func() {
			for range 200 {
				if !b.admit() {
					continue
				}
				admitted.Add(1)
				b.goWork(0, func(ctx context.Context) {
					if ctx.Err() == nil {
						ran.Add(1)
					}
				})
				b.wg.Done()
			}
		})
	}
	cancel()
	b.stopWork()
	if ran.Load() != admitted.Load() {
		t.Errorf("%d handlers admitted, the work of %d ran to the end", admitted.Load(), ran.Load())
	}
	handlers.Wait()
	if b.admit() {
		t.Error("a handler was admitted after the bot stopped")
	}
	b.goBackground(0, func(context.Context) { t.Error("background work started after the bot stopped") })
}

// Work that outlasts the shutdown grace is cancelled, and the stop waits
// until it has returned.
func TestStopCancelsWorkPastTheGrace(t *testing.T) {
	t.Parallel()
	b, cancel := stoppableBot(time.Millisecond)
	var returned atomic.Bool
	if !b.admit() {
		t.Fatal("not admitted")
	}
	b.goWork(0, func(ctx context.Context) {
		<-ctx.Done()
		returned.Store(true)
	})
	b.wg.Done()
	cancel()
	b.stopWork()
	if !returned.Load() {
		t.Error("stopWork returned before the work it cancelled")
	}
}

// What a person is told of their command or click goes out though the
// work's context ended (its timeout, the shutdown's grace): the answer
// has a context of its own, bounded.
func TestAnAnswerOutlivesItsWork(t *testing.T) {
	t.Parallel()
	work, cancel := context.WithCancel(context.Background())
	cancel()
	ctx, done := answering(work)
	defer done()
	if err := ctx.Err(); err != nil {
		t.Fatalf("the answer's context ended with its work: %v", err)
	}
	if deadline, ok := ctx.Deadline(); !ok || time.Until(deadline) > answerTimeout {
		t.Errorf("the answer's context has no bound (deadline %v, %v)", deadline, ok)
	}
}
