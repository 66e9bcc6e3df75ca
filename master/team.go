package master

import (
	"strings"
	"time"
)

// MemberState is what a team member is doing, derived from tasks and
// signals: it is never stored, so it cannot drift.
type MemberState string

// Member states.
const (
	MemberIdle    MemberState = "idle"
	MemberWorking MemberState = "working"
	MemberBlocked MemberState = "blocked" // blocked, or waiting for an answer or an approval
)

// Member is a role with its derived state.
type Member struct {
	Role  Role
	State MemberState
}

// Members derives each role's state from the tasks of the session's
// current turn: working while it has a queued or running task; blocked
// while its latest task there ended blocked or waits for an answer and the
// turn is still open; idle otherwise.
func Members(roster []Role, turn *Turn, tasks []Task) []Member {
	open := turn != nil && (turn.State == TurnRunning || turn.State == TurnWaiting || turn.State == TurnQueued)
	out := make([]Member, len(roster))
	for i, r := range roster {
		out[i] = Member{Role: r, State: MemberIdle}
		var latest *Task
		for j := range tasks {
			t := &tasks[j]
			if t.Role != r.Name {
				continue
			}
			if !t.State.Terminal() {
				out[i].State = MemberWorking
			}
			if t.State == TaskApproval {
				out[i].State = MemberBlocked
			}
			latest = t
		}
		if out[i].State == MemberIdle && open && latest != nil &&
			(latest.State == TaskBlocked || latest.Question() != "") {
			out[i].State = MemberBlocked
		}
	}
	return out
}

// TeamView is what /team shows.
type TeamView struct {
	Session  Session
	Roster   []Role
	Turn     *Turn  // the open turn, else the latest; nil before any
	Tasks    []Task // the turn's tasks
	Progress map[int64]Progress
	// Calls are the tool calls under way, or waiting for approval, by
	// task id.
	Calls   map[int64]ToolActivity
	Signals []Signal // the latest few, oldest first
	// Dispatched are the teams this session's master started elsewhere.
	Dispatched []Session
	Spend      SessionSpend // what the team used, by model, and its own budget
	// Reliability is the roster's records in the session's channel over
	// ReliabilityWindow (roles with no ended task there are left out).
	Reliability []Reliability
	// Budget is the team's token budget in effect (0: none), and Cost
	// what it used costs as far as prices are known; WorkerModel is the
	// model of a role that names none: Commands fills the three.
	Budget      int64
	Cost        Cost
	WorkerModel string
	// Presence is what the team's features did: its channel's notes,
	// its reviews.
	Presence TeamPresence
	Now      time.Time
}

// ToolsLine is prefix and a role's tools list, or "" for none.
func ToolsLine(prefix string, tools []string) string {
	if len(tools) == 0 {
		return ""
	}
	return prefix + Truncate(strings.Join(tools, ", "), 200)
}
