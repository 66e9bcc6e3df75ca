package master

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/internal/proc"
)

// fakeWebhookStore is a WebhookStore of functions.
type fakeWebhookStore struct {
	ClaimFunc  func(n int, lease time.Duration) ([]WebhookEvent, error)
	RecordFunc func(r WebhookResult) error
}

func (f *fakeWebhookStore) ClaimWebhooks(_ context.Context, n int, lease time.Duration) ([]WebhookEvent, error) {
	return f.ClaimFunc(n, lease)
}

func (f *fakeWebhookStore) RecordWebhook(_ context.Context, r WebhookResult) error {
	return f.RecordFunc(r)
}

type posterFunc func(ctx context.Context, ev WebhookEvent) (int, error)

func (p posterFunc) Post(ctx context.Context, ev WebhookEvent) (PostResult, error) {
	status, err := p(ctx, ev)
	return PostResult{Status: status}, err
}

func TestWebhookJudge(t *testing.T) {
	t.Parallel()
	s := NewWebhookSender(WebhookSenderConfig{Retries: 2}, nil, nil, slog.New(slog.DiscardHandler))
	cases := []struct {
		name      string
		attempt   int
		status    int
		err       error
		delivered bool
		failed    bool
	}{
		{"200", 1, 200, nil, true, false},
		{"204", 3, 204, nil, true, false},
		{"network error", 1, 0, errors.New("connection refused"), false, false},
		{"500", 1, 500, nil, false, false},
		{"503 on the last retry", 2, 503, nil, false, false},
		{"429", 1, 429, nil, false, false},
		{"408", 1, 408, nil, false, false},
		{"400 is permanent", 1, 400, nil, false, true},
		{"404 is permanent", 1, 404, nil, false, true},
		{"a redirect is permanent", 1, 302, nil, false, true},
		{"500 with no retry left", 3, 500, nil, false, true},
		{"network error with no retry left", 3, 0, errors.New("timeout"), false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.judge(WebhookEvent{ID: 7, Attempt: c.attempt}, PostResult{Status: c.status}, c.err)
			if r.Delivered != c.delivered || r.Failed != c.failed || r.EventID != 7 || r.Attempt != c.attempt || r.Status != c.status {
				t.Errorf("%s: got %+v, want delivered %v failed %v", c.name, r, c.delivered, c.failed)
			}
			if retry := !r.Delivered && !r.Failed; retry != (r.RetryIn > 0) {
				t.Errorf("%s: RetryIn %v for a result that retries: %v", c.name, r.RetryIn, retry)
			}
			if !c.delivered && r.Error == "" {
				t.Errorf("%s: no error recorded", c.name)
			}
		})
	}
}

func TestWebhookJudgeHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	s := NewWebhookSender(WebhookSenderConfig{Retries: 5}, nil, nil, slog.New(slog.DiscardHandler))
	cases := []struct {
		name       string
		status     int
		retryAfter time.Duration
		atLeast    time.Duration
		atMost     time.Duration
	}{
		{"429 with Retry-After: 120", 429, 2 * time.Minute, 2 * time.Minute, 2 * time.Minute},
		{"503 with Retry-After: 30", 503, 30 * time.Second, 30 * time.Second, 30 * time.Second},
		{"a day is bounded to an hour", 503, 24 * time.Hour, MaxRetryAfter, MaxRetryAfter},
		{"shorter than the backoff: the backoff", 500, time.Millisecond, 500 * time.Millisecond, time.Second},
		{"none: the backoff", 500, 0, 500 * time.Millisecond, time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := s.judge(WebhookEvent{ID: 7, Attempt: 1}, PostResult{Status: c.status, RetryAfter: c.retryAfter}, nil)
			if r.Delivered || r.Failed || r.RetryIn < c.atLeast || r.RetryIn > c.atMost {
				t.Errorf("%s: got %+v, want a retry in [%v, %v]", c.name, r, c.atLeast, c.atMost)
			}
		})
	}
	// A permanent answer stays permanent whatever it says.
	if r := s.judge(WebhookEvent{ID: 7, Attempt: 1}, PostResult{Status: 400, RetryAfter: time.Minute}, nil); !r.Failed {
		t.Errorf("400 with Retry-After: %+v, want given up", r)
	}
}

func TestWebhookBackoffGrowsWithJitterUpToTheCap(t *testing.T) {
	t.Parallel()
	const base, hi = time.Second, 5 * time.Minute
	for n := 1; n <= 20; n++ {
		want := min(base<<(n-1), hi)
		for range 50 {
			if d := proc.Backoff(n, base, hi); d < want/2 || d > want {
				t.Fatalf("proc.Backoff(%d) = %v, want within [%v, %v]", n, d, want/2, want)
			}
		}
	}
	// Growth: each attempt's shortest delay is the previous one's longest.
	if proc.Backoff(3, base, hi) < 2*time.Second || proc.Backoff(1, base, hi) > time.Second {
		t.Error("the third delay is not at least the first one's longest")
	}
}

func TestWebhookSenderGivesUpAnEventWhoseLastAttemptWasCut(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []WebhookResult
	claims := 0
	st := &fakeWebhookStore{
		ClaimFunc: func(int, time.Duration) ([]WebhookEvent, error) {
			claims++
			if claims > 1 {
				return nil, nil
			}
			// Retries 1 allows attempts 1 and 2; attempt 3 means attempt 2
			// was claimed by a process that died.
			return []WebhookEvent{{ID: 1, Attempt: 3}, {ID: 2, Attempt: 2}}, nil
		},
		RecordFunc: func(r WebhookResult) error { mu.Lock(); defer mu.Unlock(); got = append(got, r); return nil },
	}
	posted := make(chan int64, 2)
	post := posterFunc(func(_ context.Context, ev WebhookEvent) (int, error) { posted <- ev.ID; return 200, nil })
	s := NewWebhookSender(WebhookSenderConfig{Retries: 1}, st, post, slog.New(slog.DiscardHandler))
	if n, err := s.Flush(t.Context()); n != 2 || err != nil {
		t.Fatalf("Flush = %d, %v", n, err)
	}
	close(posted)
	var ids []int64
	for id := range posted {
		ids = append(ids, id)
	}
	if len(ids) != 1 || ids[0] != 2 {
		t.Errorf("posted %v, want only event 2", ids)
	}
	if len(got) != 2 {
		t.Fatalf("recorded %+v, want both events", got)
	}
	for _, r := range got {
		switch r.EventID {
		case 1:
			if !r.Failed || r.Delivered {
				t.Errorf("event 1: %+v, want given up without a post", r)
			}
		case 2:
			if !r.Delivered {
				t.Errorf("event 2: %+v, want delivered", r)
			}
		}
	}
}

func TestWebhookSenderHandsBackAnAttemptCutByShutdown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	var got WebhookResult
	st := &fakeWebhookStore{
		ClaimFunc:  func(int, time.Duration) ([]WebhookEvent, error) { return []WebhookEvent{{ID: 1, Attempt: 1}}, nil },
		RecordFunc: func(r WebhookResult) error { got = r; return nil },
	}
	post := posterFunc(func(ctx context.Context, _ WebhookEvent) (int, error) {
		cancel() // callon stops while the receiver thinks
		<-ctx.Done()
		return 0, ctx.Err()
	})
	s := NewWebhookSender(WebhookSenderConfig{Retries: 0}, st, post, slog.New(slog.DiscardHandler))
	if _, err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if !got.Interrupted || got.Failed || got.EventID != 1 || got.Attempt != 1 {
		t.Errorf("recorded %+v, want the attempt handed back as interrupted", got)
	}
}
