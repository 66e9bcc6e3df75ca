package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/callonbot/callon/llm/llmfake"
)

// trap makes the first model call of a kind after arm block until
// release, so that the process making it can be killed in the middle of
// it.
type trap struct {
	mu      sync.Mutex
	worker  bool          // trap a worker's call; else the master's
	armed   bool          // the next call of that kind is held
	held    chan struct{} // closed when it is
	release chan struct{} // closed to let it go
}

func (t *trap) arm(worker bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.worker, t.armed = worker, true
	t.held, t.release = make(chan struct{}), make(chan struct{})
}

// script wraps next: the trapped call waits, then answers as next does.
func (t *trap) script(next llmfake.Script) llmfake.Script {
	return func(req llmfake.Request) llmfake.Reply {
		isWorker := !strings.Contains(req.System(), "You are the coordinator of a team")
		t.mu.Lock()
		hold := t.armed && isWorker == t.worker
		held, release := t.held, t.release
		if hold {
			t.armed = false
		}
		t.mu.Unlock()
		if hold {
			close(held)
			<-release
		}
		return next(req)
	}
}

// recoveryTarget bounds what a process's death adds to the reply: the
// time from the kill to the reply beyond the model's time (the cut-off
// call made again, and the calls after it).
const recoveryTarget = time.Second

// recovery kills (SIGKILL) a callon process in the middle of a model call
// for a team — a worker's task or the master's decision, in turn — while
// a second process runs, and measures from the kill to the reply, and
// that time less the model's answering in between (every call takes
// RecoveryLatency).
func (b *bench) recovery(ctx context.Context) ([]StageResult, error) {
	t := &trap{}
	w, err := b.newWorld(ctx, t.script(script(b.sizes.RecoveryLatency)))
	if err != nil {
		return nil, err
	}
	defer w.close()
	var took, over []time.Duration
	for i := range b.sizes.Kills {
		d, model, err := w.killOnce(ctx, t, i)
		if err != nil {
			return nil, err
		}
		took, over = append(took, d), append(over, d-model)
	}
	lat := fmt.Sprintf(" (each model call %s)", b.sizes.RecoveryLatency)
	overhead := dist(over)
	return []StageResult{
		{Name: "recovery", Samples: len(took), Latency: dist(took),
			What: "kill → reply: a process killed in a model call (worker's and master's in turn), another one takes over" + lat},
		StageResult{Name: "recovery.overhead", Samples: len(over), Latency: overhead,
			What: "kill → reply less the model's time after the kill: what the death itself costs" + lat,
		}.target(fmt.Sprintf("p50 ≤ %s", recoveryTarget), overhead.P50 <= ms(recoveryTarget)),
	}, w.tb.err()
}

// killOnce kills a process in a model call and returns the time from the
// kill to the reply, and how much of it the model was answering.
func (w *world) killOnce(ctx context.Context, t *trap, i int) (took, model time.Duration, err error) {
	doomed, err := w.spawn()
	if err != nil {
		return 0, 0, err
	}
	defer doomed.kill()
	thread := w.team(fmt.Sprintf("bench recovery %d", i))
	worker := i%2 == 0
	t.arm(worker)
	text := fmt.Sprintf("[direct] recovery %d", i)
	if worker {
		text = fmt.Sprintf("[chain2] recovery %d", i)
	}
	msg := w.dc.UserMessage(thread, w.dc.UserID(), text)
	select {
	case <-t.held:
	case <-time.After(time.Minute):
		return 0, 0, fmt.Errorf("the process to kill never reached the model call")
	}
	// The survivor.
	before := len(w.dc.IdentifyLog())
	if err := w.start(ctx); err != nil {
		return 0, 0, err
	}
	w.wait(func() bool { return len(w.dc.IdentifyLog()) > before }, "the survivor to connect")
	killed := time.Now()
	doomed.kill()
	close(t.release)
	reply := w.replyTo(thread, msg, "the survivor's reply")
	err = w.stop()
	w.stop = nil
	return reply.Timestamp.Sub(killed), modelTime(w.ai.Requests(), killed, reply.Timestamp), err
}
