package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// approvalFake is a SettleStore whose methods call its Func fields, and a
// master.Messenger that logs its edits.
type approvalFake struct {
	UnsettledFn func(ctx context.Context, before time.Time, limit int) ([]master.Approval, error)
	EditFunc    func(channelID, messageID, content string) error

	log []string
}

func (f *approvalFake) UnsettledApprovals(ctx context.Context, _ master.Scope, before time.Time, limit int) ([]master.Approval, error) {
	return f.UnsettledFn(ctx, before, limit)
}
func (f *approvalFake) SettleApproval(_ context.Context, id int64) error {
	f.log = append(f.log, fmt.Sprintf("settled %d", id))
	return nil
}
func (f *approvalFake) Send(context.Context, master.OutMessage) (string, error) { return "", nil }
func (f *approvalFake) Find(context.Context, master.OutMessage) (string, error) { return "", nil }
func (f *approvalFake) Edit(_ context.Context, channelID, messageID, content string) error {
	f.log = append(f.log, fmt.Sprintf("edit %s/%s: %s", channelID, messageID, content[strings.LastIndex(content, "\n")+1:]))
	return f.EditFunc(channelID, messageID, content)
}
func (f *approvalFake) Typing(context.Context, string) error  { return nil }
func (f *approvalFake) Archive(context.Context, string) error { return nil }

// The settler edits decided requests' messages to show their outcome,
// counts a message it can no longer edit as settled, and stops a pass at
// a failure that may pass.
func TestSettler(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	list := []master.Approval{
		{ID: 1, Role: "engineer", Tool: "git__push", State: master.ApprovalExpired, ChannelID: "th", MessageID: "m1"},
		{ID: 2, Role: "engineer", Tool: "git__push", State: master.ApprovalCancelled, ChannelID: "th", MessageID: "m2"},
		{ID: 3, Role: "engineer", Tool: "git__push", State: master.ApprovalDenied, DecidedBy: "u", DecidedAt: now, ChannelID: "th", MessageID: "m3"},
	}
	var before time.Time
	f := &approvalFake{
		UnsettledFn: func(_ context.Context, b time.Time, limit int) ([]master.Approval, error) {
			before = b
			return list, nil
		},
		EditFunc: func(_, messageID, _ string) error {
			switch messageID {
			case "m2":
				return fmt.Errorf("%w: thread archived", master.ErrPermanent)
			case "m3":
				return errors.New("503")
			}
			return nil
		},
	}
	s := NewSettler(SettlerConfig{Grace: time.Second, Now: func() time.Time { return now }}, f, f, slog.New(slog.DiscardHandler))
	n, err := s.settle(t.Context())
	if n != 2 || err == nil || !before.Equal(now.Add(-time.Second)) {
		t.Errorf("settle = %d, %v (before %s), want 2 settled and the 503", n, err, before)
	}
	want := []string{
		"edit th/m1: ⌛ Nobody decided in time, so it counts as denied: the call is not made.",
		"settled 1",
		"edit th/m2: ⏹️ No longer needed: the task ended first.",
		"settled 2",
		fmt.Sprintf("edit th/m3: ⛔ Denied by <@u> <t:%d:R>: the call is not made.", now.Unix()),
	}
	if strings.Join(f.log, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n  %s\nwant:\n  %s", strings.Join(f.log, "\n  "), strings.Join(want, "\n  "))
	}
}
