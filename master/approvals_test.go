package master

import (
	"context"
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
	f.log = append(f.log, fmt.Sprintf("edit %s/%s: %s", channelID, messageID, content[strings.LastIndex(content, "\n")+1:]))
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

// A chat's terminal decides its own team's requests only: another
// team's, though its owner is the same person, is not found there.
func TestDecideInKeepsToItsTeam(t *testing.T) {
	t.Parallel()
	f := &approvalFake{
		ApprovalFunc: func(_ context.Context, id int64) (Approval, Session, error) {
			return Approval{ID: id, SessionID: id, State: ApprovalPending}, Session{ID: id, OwnerID: "you"}, nil
		},
		DecideFunc: func(_ context.Context, id int64, approve bool, by string) (Approval, error) {
			return Approval{ID: id, State: ApprovalApproved, DecidedBy: by}, nil
		},
	}
	a := NewApprovals(f, slog.New(slog.DiscardHandler))
	if _, err := a.DecideIn(t.Context(), 1, 2, true, Actor{UserID: "you"}); ErrorCode(err) != ENotFound {
		t.Errorf("team 1's terminal deciding team 2's request: %v, want ENotFound", err)
	}
	if got, err := a.DecideIn(t.Context(), 1, 1, true, Actor{UserID: "you"}); err != nil || got.State != ApprovalApproved {
		t.Errorf("its own request: %+v, %v", got, err)
	}
	if want := "decide 1 true you"; strings.Join(f.log, ",") != want {
		t.Errorf("decisions recorded %q, want %q", f.log, want)
	}
}

// Arguments a person and a tool could read two ways are refused before
// anyone is asked: not one JSON object, or a key given twice at any depth
// (JSON parsers keep the last one, which the approver may never see).
func TestCheckArgs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args string
		want string // "" for fine
	}{
		{`{"path":"/a"}`, ""},
		{``, ""},
		{`  {} `, ""},
		{`{"a":{"b":1,"c":[{"d":1},{"d":2}]}}`, ""},
		{`{"path":"/srv/notes/pricing.md","x":"...","path":"/home/callon/.ssh/authorized_keys"}`, `give the key "path" twice`},
		{`{"a":{"b":1,"b":2}}`, `"a" give the key "b" twice`},
		{`{"a":[{"b":1,"b":2}]}`, `give the key "b" twice`},
		{`["path"]`, "one JSON object"},
		{`"x"`, "one JSON object"},
		{`null`, "one JSON object"},
		{`{"a":1}{"a":2}`, "nothing after it"},
		{`{"a":`, "not valid JSON"},
	} {
		err := CheckArgs(tc.args)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckArgs(%s) = %v, want %q", tc.args, err, tc.want)
		}
	}
}

// With approvers named, only a member holding one of those roles decides,
// and never the team's owner, whatever their permissions.
func TestMayDecideWithApprovers(t *testing.T) {
	t.Parallel()
	s := Session{ID: 1, OwnerID: "owner"}
	ap := Approval{Approvers: []string{"333"}}
	for _, tc := range []struct {
		name  string
		actor Actor
		want  bool
	}{
		{"the owner", Actor{UserID: "owner", Permissions: PermAdministrator, Roles: []string{"333"}}, false},
		{"a thread manager", Actor{UserID: "mod", Permissions: PermManageThreads}, false},
		{"an approver", Actor{UserID: "ann", Roles: []string{"1", "333"}}, true},
		{"a bot with the role", Actor{UserID: "bot", Bot: true, Roles: []string{"333"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MayDecide(s, ap, tc.actor); got != tc.want {
				t.Errorf("%s: MayDecide = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
	if !MayDecide(s, Approval{}, Actor{UserID: "owner"}) || MayDecide(s, Approval{}, Actor{UserID: "x"}) {
		t.Error("without approvers: want the owner, not a bystander")
	}
}
