package master

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

type purgeFake struct {
	mu      sync.Mutex
	cutoffs []time.Time
	calls   chan struct{}
}

func (f *purgeFake) PurgeEnded(_ context.Context, cutoff time.Time, batch int) (Purged, bool, error) {
	f.mu.Lock()
	f.cutoffs = append(f.cutoffs, cutoff)
	f.mu.Unlock()
	select {
	case f.calls <- struct{}{}:
	default: // nobody is waiting any more
	}
	return Purged{Sessions: 1}, true, nil
}

func TestRetentionPurgesWhatEndedBeforeKeep(t *testing.T) {
	t.Parallel()
	f := &purgeFake{calls: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(t.Context())
	r := NewRetention(RetentionConfig{Keep: time.Hour, Every: time.Millisecond}, f, slog.New(slog.DiscardHandler))
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- r.Run(ctx) }()
	<-f.calls
	<-f.calls // and again, after Every
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if c := f.cutoffs[0]; c.After(start.Add(-time.Hour+time.Second)) || c.Before(start.Add(-time.Hour-time.Second)) {
		t.Errorf("cutoff %v, want an hour before %v", c, start)
	}
}

func TestRetentionKeepsEverythingAtZero(t *testing.T) {
	t.Parallel()
	f := &purgeFake{calls: make(chan struct{})}
	if err := NewRetention(RetentionConfig{}, f, slog.New(slog.DiscardHandler)).Run(t.Context()); err != nil {
		t.Errorf("Run = %v", err)
	}
	if len(f.cutoffs) != 0 {
		t.Errorf("purged %d times with retention 0, want never", len(f.cutoffs))
	}
}
