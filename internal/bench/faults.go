package bench

import (
	"fmt"
	"sync"
)

// faults collects what the fakes report while a stage runs (a request
// the fake model did not expect), and the fake Discord's refusals and
// timed-out waits, which end the stage (Fatalf panics; guard turns it
// into the stage's error); it closes the fakes when the world closes.
type faults struct {
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

// fatal is the panic of Fatalf; guard turns it into the stage's error.
type fatal string

func (t *faults) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *faults) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errs = append(t.errs, fmt.Sprintf(format, args...))
}

func (t *faults) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	panic(fatal(fmt.Sprintf(format, args...)))
}

// err returns the first error a fake reported, if any.
func (t *faults) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", t.errs[0])
}

// close runs the cleanups, last first.
func (t *faults) close() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
