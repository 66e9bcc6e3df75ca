package master

import (
	"testing"
)

func TestMembersDerivedState(t *testing.T) {
	t.Parallel()
	roster := DefaultRoles()[:4]
	running := &Turn{State: TurnRunning}
	tasks := []Task{
		{Role: "researcher", State: TaskDone},
		{Role: "researcher", State: TaskRunning},
		{Role: "planner", State: TaskBlocked},
		{Role: "engineer", State: TaskNeedInfo, QA: []QA{{Question: "which?"}}},
	}
	want := map[string]MemberState{"researcher": MemberWorking, "planner": MemberBlocked, "engineer": MemberBlocked, "writer": MemberIdle}
	for _, m := range Members(roster, running, tasks) {
		if m.State != want[m.Role.Name] {
			t.Errorf("%s is %s, want %s", m.Role.Name, m.State, want[m.Role.Name])
		}
	}
	for _, m := range Members(roster, &Turn{State: TurnDone}, tasks[2:]) {
		if m.State != MemberIdle {
			t.Errorf("after the turn ended %s is %s, want idle", m.Role.Name, m.State)
		}
	}
}
