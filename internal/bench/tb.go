package bench

import (
	"fmt"
	"sync"
	"testing"
)

// fakeTB lets the test fake of Discord (bot/discordtest) run outside
// a test. It calls Helper, Cleanup, Errorf and Fatalf; the embedded
// interface is nil, so any other method would panic, which is the
// fake's contract changing under us, not something to hide.
type fakeTB struct {
	testing.TB

	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

// fatal is the panic of Fatalf; guard turns it into the stage's error.
type fatal string

func (t *fakeTB) Helper() {}

func (t *fakeTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *fakeTB) Errorf(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.errs = append(t.errs, fmt.Sprintf(format, args...))
}

func (t *fakeTB) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	panic(fatal(fmt.Sprintf(format, args...)))
}

func (t *fakeTB) Logf(string, ...any) {}

func (t *fakeTB) Log(...any) {}

// err returns the first error a fake reported, if any.
func (t *fakeTB) err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", t.errs[0])
}

// close runs the cleanups, last first.
func (t *fakeTB) close() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
