package terminal

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// scriptTeam is a team that never answers: what RunLines waits for, it
// must not wait for here.
type scriptTeam struct {
	said    []string
	refuse  string // a message Say refuses with ErrNotTaken
	decided master.ApprovalState
}

func (s *scriptTeam) Say(_ context.Context, text string) error {
	s.said = append(s.said, text)
	if text == s.refuse {
		return ErrNotTaken
	}
	return nil
}
func (*scriptTeam) Show(context.Context) (master.TeamView, error) { return master.TeamView{}, nil }
func (*scriptTeam) Replan(context.Context, string) error          { return nil }
func (*scriptTeam) Dissolve(context.Context) error                { return nil }
func (s *scriptTeam) Decide(_ context.Context, id int64, _ bool) (master.Approval, error) {
	return master.Approval{ID: id, State: s.decided, Role: "engineer", Tool: "demo.roll_dice"}, nil
}
func (*scriptTeam) Memory(context.Context, string) (string, error) { return "", nil }

// A script is never left waiting for an answer that cannot come: a
// message sent while a request waits (its answer comes after the request,
// which only a later line decides), a request that had ended before the
// script decided it, and a message the team refused (said at once).
func TestLinesNeverWaitForWhatCannotCome(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	team := &scriptTeam{refuse: "one more", decided: master.ApprovalExpired}
	pending := master.Approval{ID: 4, State: master.ApprovalPending, Role: "engineer", Tool: "demo.roll_dice"}
	var out strings.Builder
	in := strings.NewReader("hello\n/approve 4\none more\n/quit\n")
	outcome, err := RunLines(ctx, in, &out, team, NewMessenger(), Options{Pending: []master.Approval{pending}})
	if err != nil || outcome != Left {
		t.Fatalf("RunLines = %v, %v; want Left", outcome, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("RunLines waited until its context ended:\n%s", out.String())
	}
	if len(team.said) != 2 {
		t.Errorf("said %q, want both messages sent", team.said)
	}
	for _, want := range []string{"answered after it", "did not take that message"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
}
