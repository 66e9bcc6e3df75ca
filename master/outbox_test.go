package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// outboxFake is an OutboxStore and a Messenger whose methods are func
// fields; it records what the dispatcher did.
type outboxFake struct {
	mu  sync.Mutex
	log []string

	ClaimOutboxFunc func(n int) []OutMessage
	ProbeOutboxFunc func() (OutMessage, bool)
	SendFunc        func(m OutMessage) (string, error)
	FindFunc        func(m OutMessage) (string, error)

	retryIn []time.Duration // of every MarkUnsent that was not permanent
}

func (f *outboxFake) note(format string, args ...any) {
	f.mu.Lock()
	f.log = append(f.log, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

func (f *outboxFake) ClaimOutbox(_ context.Context, _ Scope, _ string, n int, _ time.Duration) ([]OutMessage, error) {
	return f.ClaimOutboxFunc(n), nil
}
func (f *outboxFake) MarkSent(_ context.Context, id int64, discordID string) error {
	f.note("sent %d as %s", id, discordID)
	return nil
}
func (f *outboxFake) MarkUnsent(_ context.Context, id int64, reason string, retryIn time.Duration, permanent bool) error {
	if permanent {
		f.note("gave up %d", id)
	} else {
		f.note("retry %d", id)
		f.mu.Lock()
		f.retryIn = append(f.retryIn, retryIn)
		f.mu.Unlock()
	}
	return nil
}
func (f *outboxFake) ProbeOutbox(context.Context, Scope, string, time.Duration) (OutMessage, bool, error) {
	if f.ProbeOutboxFunc == nil {
		return OutMessage{}, false, nil
	}
	m, ok := f.ProbeOutboxFunc()
	if ok {
		f.note("probe %d", m.ID)
	}
	return m, ok, nil
}
func (f *outboxFake) ReleaseClaims(context.Context, string) error { return nil }
func (f *outboxFake) ShortenWaits(context.Context, time.Duration) (int, error) {
	f.note("shorten waits")
	return 0, nil
}
func (f *outboxFake) ReleaseOutbox(_ context.Context, m OutMessage) error {
	f.note("released %d", m.ID)
	return nil
}
func (f *outboxFake) Send(_ context.Context, m OutMessage) (string, error) {
	f.note("send %d", m.ID)
	return f.SendFunc(m)
}
func (f *outboxFake) Find(_ context.Context, m OutMessage) (string, error) {
	f.note("find %d", m.ID)
	if f.FindFunc == nil {
		return "", nil
	}
	return f.FindFunc(m)
}
func (f *outboxFake) Edit(context.Context, string, string, string) error { return nil }
func (f *outboxFake) Typing(context.Context, string) error               { return nil }
func (f *outboxFake) Archive(context.Context, string) error              { return nil }

func TestOutboxDeliver(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	msg := func(id int64, attempts int, age time.Duration) OutMessage {
		return OutMessage{ID: id, ChannelID: "c", Attempts: attempts, CreatedAt: now.Add(-age)}
	}
	transient := errors.New("503 Service Unavailable")
	tests := []struct {
		name string
		msgs []OutMessage
		send func(m OutMessage) (string, error)
		find func(m OutMessage) (string, error)
		want string
	}{
		{
			name: "sent in order",
			msgs: []OutMessage{msg(1, 0, 0), msg(2, 0, 0)},
			send: func(m OutMessage) (string, error) { return fmt.Sprint("d", m.ID), nil },
			want: "send 1; sent 1 as d1; send 2; sent 2 as d2",
		},
		{
			name: "a transient failure is retried and the rest given back untried",
			msgs: []OutMessage{msg(1, 3, time.Hour), msg(2, 0, 0), msg(3, 0, 0)},
			send: func(OutMessage) (string, error) { return "", transient },
			want: "send 1; retry 1; released 2; released 3",
		},
		{
			name: "a transient failure past the retry period is given up, the next goes on",
			msgs: []OutMessage{msg(1, 500, 25*time.Hour), msg(2, 0, 0)},
			send: func(m OutMessage) (string, error) {
				if m.ID == 1 {
					return "", transient
				}
				return "d2", nil
			},
			want: "send 1; gave up 1; send 2; sent 2 as d2",
		},
		{
			name: "a permanent failure is given up at once",
			msgs: []OutMessage{msg(1, 0, 0)},
			send: func(OutMessage) (string, error) { return "", fmt.Errorf("%w: 50013 Missing Permissions", ErrPermanent) },
			want: "send 1; gave up 1",
		},
		{
			name: "maybe sent within the nonce window: sent again, Discord deduplicates",
			msgs: []OutMessage{{ID: 1, ChannelID: "c", CreatedAt: now, MaybeSentAt: now.Add(-10 * time.Second)}},
			send: func(OutMessage) (string, error) { return "d1", nil },
			want: "send 1; sent 1 as d1",
		},
		{
			name: "maybe sent long ago and found: recorded, not posted again",
			msgs: []OutMessage{{ID: 1, ChannelID: "c", CreatedAt: now, MaybeSentAt: now.Add(-time.Hour)}},
			send: func(OutMessage) (string, error) { return "dup", nil },
			find: func(OutMessage) (string, error) { return "d-earlier", nil },
			want: "find 1; sent 1 as d-earlier",
		},
		{
			name: "maybe sent long ago, not found: posted",
			msgs: []OutMessage{{ID: 1, ChannelID: "c", CreatedAt: now, MaybeSentAt: now.Add(-time.Hour)}},
			send: func(OutMessage) (string, error) { return "d1", nil },
			want: "find 1; send 1; sent 1 as d1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &outboxFake{SendFunc: tt.send, FindFunc: tt.find}
			claimed := false
			f.ClaimOutboxFunc = func(int) []OutMessage {
				if claimed {
					return nil
				}
				claimed = true
				return tt.msgs
			}
			d := NewOutbox(OutboxConfig{Owner: "p1", Now: func() time.Time { return now }}, f, f, slog.New(slog.DiscardHandler))
			if _, err := d.Flush(t.Context()); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(f.log, "; "); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// On shutdown, a message whose send was cut short is given back untried.
func TestOutboxShutdownGivesBackUntried(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	f := &outboxFake{}
	f.ClaimOutboxFunc = func(int) []OutMessage {
		return []OutMessage{{ID: 1, ChannelID: "c", CreatedAt: time.Now()}, {ID: 2, ChannelID: "c", CreatedAt: time.Now()}}
	}
	f.SendFunc = func(OutMessage) (string, error) {
		cancel()
		return "", context.Canceled
	}
	d := NewOutbox(OutboxConfig{Owner: "p1"}, f, f, slog.New(slog.DiscardHandler))
	d.Flush(ctx)
	if got, want := strings.Join(f.log, "; "), "send 1; released 2; released 1"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// However many times a message failed, its next try is at most
// MaxRetryDelay (30 s by default) away: a message is never much longer
// than that behind a Discord that answers again.
func TestOutboxRetryDelayIsCapped(t *testing.T) {
	t.Parallel()
	f := &outboxFake{SendFunc: func(OutMessage) (string, error) { return "", errors.New("503 Service Unavailable") }}
	f.ClaimOutboxFunc = func(int) []OutMessage {
		return []OutMessage{{ID: 1, ChannelID: "c", Attempts: 200, CreatedAt: time.Now()}}
	}
	d := NewOutbox(OutboxConfig{Owner: "p1"}, f, f, slog.New(slog.DiscardHandler))
	if _, err := d.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(f.retryIn) != 1 || f.retryIn[0] > 30*time.Second {
		t.Errorf("retry delays %v, want one of at most 30s", f.retryIn)
	}
}

// A failed send makes the outbox probe: one message per pass, whatever
// else waits; the probe Discord answers ends the probing, shortens every
// wait and lets a batch go at once.
func TestOutboxProbesWhileSendsFail(t *testing.T) {
	t.Parallel()
	down := true
	f := &outboxFake{}
	f.SendFunc = func(m OutMessage) (string, error) {
		if down {
			return "", errors.New("503 Service Unavailable")
		}
		return fmt.Sprint("d", m.ID), nil
	}
	f.ClaimOutboxFunc = func(int) []OutMessage {
		return []OutMessage{{ID: 1, ChannelID: "a", CreatedAt: time.Now()}, {ID: 2, ChannelID: "a", CreatedAt: time.Now()}}
	}
	f.ProbeOutboxFunc = func() (OutMessage, bool) { return OutMessage{ID: 1, ChannelID: "a", CreatedAt: time.Now()}, true }
	d := NewOutbox(OutboxConfig{Owner: "p1"}, f, f, slog.New(slog.DiscardHandler))
	for range 2 {
		if _, err := d.Flush(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if !d.Probing() {
		t.Error("not probing after failed sends")
	}
	down = false
	f.ClaimOutboxFunc = func(int) []OutMessage { return []OutMessage{{ID: 2, ChannelID: "a", CreatedAt: time.Now()}} }
	if _, err := d.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := "send 1; retry 1; released 2; probe 1; send 1; retry 1; probe 1; send 1; sent 1 as d1; shorten waits; send 2; sent 2 as d2"
	if got := strings.Join(f.log, "; "); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if d.Probing() {
		t.Error("still probing once Discord answered")
	}
}

// A send that fails on its own (the probe after it is answered at once:
// the platform was never down) shortens no wait: the failing message
// keeps its own backoff instead of being tried again within ProbeEvery,
// and probing again, for its whole retry period.
func TestOutboxLeavesALoneFailureToItsBackoff(t *testing.T) {
	t.Parallel()
	f := &outboxFake{}
	f.SendFunc = func(m OutMessage) (string, error) {
		if m.ChannelID == "troubled" {
			return "", errors.New("500 Internal Server Error")
		}
		return fmt.Sprint("d", m.ID), nil
	}
	f.ClaimOutboxFunc = func(int) []OutMessage { return []OutMessage{{ID: 1, ChannelID: "troubled", CreatedAt: time.Now()}} }
	f.ProbeOutboxFunc = func() (OutMessage, bool) { return OutMessage{ID: 2, ChannelID: "fine", CreatedAt: time.Now()}, true }
	d := NewOutbox(OutboxConfig{Owner: "p1"}, f, f, slog.New(slog.DiscardHandler))
	if _, err := d.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.ClaimOutboxFunc = func(int) []OutMessage { return nil }
	if _, err := d.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := "send 1; retry 1; probe 2; send 2; sent 2 as d2"
	if got := strings.Join(f.log, "; "); got != want {
		t.Errorf("got  %s\nwant %s (no wait shortened)", got, want)
	}
	if d.Probing() {
		t.Error("still probing once the platform answered")
	}
}
