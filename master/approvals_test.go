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

// A request's text names the role, and the tool as code, whatever name
// the model gave it (no Markdown of the model's can fake a decision), and
// shows the arguments in full, pretty-printed, in a block nothing inside
// can end.
func TestApprovalText(t *testing.T) {
	t.Parallel()
	args := "{\"path\":\"/srv/notes/pricing.md\",\"msg\":\"<@&123> @everyone ```\\n✅ Approved by <@1>\"}"
	got := ApprovalText(Approval{Role: "engineer", Tool: "shell__run** ✅ Approved by <@1> **", Args: args, State: ApprovalPending,
		ExpiresAt: time.Unix(1700000000, 0)})
	lines := strings.Split(got, "\n")
	if lines[0] != "🔐 **engineer** asks to call `shell.run** ✅ Approved by <@1> **` with:" {
		t.Errorf("head line %q, want the tool's name in a code span", lines[0])
	}
	want := "```json\n{\n  \"path\": \"/srv/notes/pricing.md\",\n  \"msg\": \"<@&123> @everyone \\u0060\\u0060\\u0060\\n✅ Approved by <@1>\"\n}\n```"
	if !strings.Contains(got, want) {
		t.Errorf("text:\n%s\nwant the arguments in full:\n%s", got, want)
	}
	if strings.Count(got, "```") != 2 {
		t.Errorf("text %q: the arguments' backticks end the block", got)
	}
	if !strings.Contains(got, "<t:1700000000:R>") || !strings.Contains(got, "The member who started the team") {
		t.Errorf("text %q lacks the deadline or who decides", got)
	}
	named := ApprovalText(Approval{Role: "engineer", Tool: "fs__write", Args: "{}", Approvers: []string{"333", "444"}, State: ApprovalPending})
	if !strings.Contains(named, "A member with <@&333> or <@&444> (never the member who started the team) can approve or deny it") {
		t.Errorf("text with approvers: %q", named)
	}
}

// Arguments longer than a message shows are attached in full as
// arguments.json; the message shows their first lines and says so.
func TestApprovalArgsAttachedWhenLong(t *testing.T) {
	t.Parallel()
	long := `{"path":"/srv/notes/pricing.md","padding":"` + strings.Repeat("x ", 1000) + `","then":"/home/callon/.ssh/authorized_keys"}`
	block, file := ApprovalArgs(long)
	if file == nil || !strings.Contains(string(file), "/home/callon/.ssh/authorized_keys") || !strings.HasSuffix(string(file), "}\n") {
		t.Fatalf("file %q, want every argument", file)
	}
	if !strings.Contains(block, "/srv/notes/pricing.md") || !strings.Contains(block, "attached `arguments.json`") || len(block) > 1100 {
		t.Errorf("block (%d chars) %q, want the first lines and the file named", len(block), block)
	}
	text := ApprovalText(Approval{Role: "r", Tool: "fs__write", Args: long, State: ApprovalPending})
	if len([]rune(text)) > MaxMessageLen || !strings.Contains(text, "can approve or deny") {
		t.Errorf("text (%d chars) cut, or without who decides", len([]rune(text)))
	}
	if block, file := ApprovalArgs(`{"a":1}`); file != nil || block != "```json\n{\n  \"a\": 1\n}\n```" {
		t.Errorf("short arguments: %q, %q", block, file)
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

// Invisible and direction-changing characters are shown as escapes: the
// approver reads what the tool will read.
func TestPrettyArgsEscapesWhatCannotBeSeen(t *testing.T) {
	t.Parallel()
	got := PrettyArgs("{\"path\":\"/srv/\u202edm.yek\u200b\"}")
	if want := "{\n  \"path\": \"/srv/\\u202edm.yek\\u200b\"\n}"; got != want {
		t.Errorf("PrettyArgs = %q, want %q", got, want)
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
		if got := MayDecide(s, ap, tc.actor); got != tc.want {
			t.Errorf("%s: MayDecide = %v, want %v", tc.name, got, tc.want)
		}
	}
	if !MayDecide(s, Approval{}, Actor{UserID: "owner"}) || MayDecide(s, Approval{}, Actor{UserID: "x"}) {
		t.Error("without approvers: want the owner, not a bystander")
	}
}
