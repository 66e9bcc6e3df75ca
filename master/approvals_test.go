package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// approvalFake is an ApprovalStore whose methods call its Func fields,
// and a Messenger that logs its edits.
type approvalFake struct {
	ApprovalFunc func(ctx context.Context, id int64) (Approval, Session, error)
	DecideFunc   func(ctx context.Context, id int64, approve bool, by string) (Approval, error)
	UnsettledFn  func(ctx context.Context, before time.Time, limit int) ([]Approval, error)
	EditFunc     func(channelID, messageID, content string) error

	log []string
}

func (f *approvalFake) Approval(ctx context.Context, id int64) (Approval, Session, error) {
	return f.ApprovalFunc(ctx, id)
}
func (f *approvalFake) DecideApproval(ctx context.Context, id int64, approve bool, by string) (Approval, error) {
	f.log = append(f.log, fmt.Sprintf("decide %d %t %s", id, approve, by))
	return f.DecideFunc(ctx, id, approve, by)
}
func (f *approvalFake) UnsettledApprovals(ctx context.Context, _ Scope, before time.Time, limit int) ([]Approval, error) {
	return f.UnsettledFn(ctx, before, limit)
}
func (f *approvalFake) SettleApproval(_ context.Context, id int64) error {
	f.log = append(f.log, fmt.Sprintf("settled %d", id))
	return nil
}
func (f *approvalFake) Send(context.Context, OutMessage) (string, error) { return "", nil }
func (f *approvalFake) Find(context.Context, OutMessage) (string, error) { return "", nil }
func (f *approvalFake) Edit(_ context.Context, channelID, messageID, content string) error {
	f.log = append(f.log, fmt.Sprintf("edit %s/%s: %s", channelID, messageID, firstLine(strings.TrimPrefix(content, firstLine(content)+"\n"))))
	return f.EditFunc(channelID, messageID, content)
}
func (f *approvalFake) Typing(context.Context, string) error  { return nil }
func (f *approvalFake) Archive(context.Context, string) error { return nil }

// The team's owner and members who can manage threads decide; anyone
// else is refused with a message for people; a request already decided
// is returned as it stands.
func TestApprovalsDecide(t *testing.T) {
	t.Parallel()
	session := Session{ID: 1, OwnerID: "owner"}
	state := ApprovalPending
	f := &approvalFake{
		ApprovalFunc: func(_ context.Context, id int64) (Approval, Session, error) {
			if id == 404 {
				return Approval{}, Session{}, ErrNotFound
			}
			return Approval{ID: id, State: state}, session, nil
		},
		DecideFunc: func(_ context.Context, id int64, approve bool, by string) (Approval, error) {
			return Approval{ID: id, State: ApprovalApproved, DecidedBy: by}, nil
		},
	}
	a := NewApprovals(f, slog.New(slog.DiscardHandler))
	ctx := t.Context()
	if _, err := a.Decide(ctx, 1, true, Actor{UserID: "someone", Permissions: PermManageChannels}); ErrorCode(err) != ENotAllowed ||
		ErrorMessage(err) != NotDecider {
		t.Errorf("a bystander: got %v, want ENotAllowed", err)
	}
	if _, err := a.Decide(ctx, 404, true, Actor{UserID: "owner"}); ErrorCode(err) != ENotFound {
		t.Errorf("a request that is gone: got %v, want ENotFound", err)
	}
	if got, err := a.Decide(ctx, 1, true, Actor{UserID: "owner"}); err != nil || got.State != ApprovalApproved || got.DecidedBy != "owner" {
		t.Errorf("the owner: got %+v, %v", got, err)
	}
	if _, err := a.Decide(ctx, 2, false, Actor{UserID: "mod", Permissions: PermManageThreads}); err != nil {
		t.Errorf("a member who manages threads: got %v", err)
	}
	state = ApprovalExpired
	if got, err := a.Decide(ctx, 3, true, Actor{UserID: "owner"}); err != nil || got.State != ApprovalExpired {
		t.Errorf("an expired request: got %+v, %v, want it as it stands", got, err)
	}
	if want := "decide 1 true owner,decide 2 false mod"; strings.Join(f.log, ",") != want {
		t.Errorf("decisions recorded %q, want %q", f.log, want)
	}
}

// The settler edits decided requests' messages to show their outcome,
// counts a message it can no longer edit as settled, and stops a pass at
// a failure that may pass.
func TestSettler(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	list := []Approval{
		{ID: 1, Role: "engineer", Tool: "git__push", State: ApprovalExpired, ChannelID: "th", MessageID: "m1"},
		{ID: 2, Role: "engineer", Tool: "git__push", State: ApprovalCancelled, ChannelID: "th", MessageID: "m2"},
		{ID: 3, Role: "engineer", Tool: "git__push", State: ApprovalDenied, DecidedBy: "u", DecidedAt: now, ChannelID: "th", MessageID: "m3"},
	}
	var before time.Time
	f := &approvalFake{
		UnsettledFn: func(_ context.Context, b time.Time, limit int) ([]Approval, error) {
			before = b
			return list, nil
		},
		EditFunc: func(_, messageID, _ string) error {
			switch messageID {
			case "m2":
				return fmt.Errorf("%w: thread archived", ErrPermanent)
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

// A request's text names the role, the tool as a role's list does, and
// the arguments shortened in a code span, whatever they hold.
func TestApprovalText(t *testing.T) {
	t.Parallel()
	args := "{\"msg\":\"<@&123> @everyone `rm -rf` " + strings.Repeat("x", 1000) + "\"}"
	got := ApprovalText(Approval{Role: "engineer", Tool: "shell__run", Args: args, State: ApprovalPending, ExpiresAt: time.Unix(1700000000, 0)})
	head := firstLine(got)
	if !strings.HasPrefix(head, "🔐 **engineer** asks to call **shell.run** with `{\"msg\":\"<@&123> @everyone ˋrm -rfˋ xxx") ||
		!strings.HasSuffix(head, "…`") || strings.Count(head, "`") != 2 {
		t.Errorf("head line %q, want the role, the tool and the arguments cut, in one code span", head)
	}
	if !strings.Contains(got, "<t:1700000000:R>") {
		t.Errorf("text %q lacks the deadline", got)
	}
}
