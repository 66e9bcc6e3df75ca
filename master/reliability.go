package master

import (
	"fmt"
	"strings"
	"time"
)

// Reliability is a role's record in one channel, read from its task rows
// (no model involved): how its tasks ended over a window, how long they
// took, what they cost, why the last one that went wrong did, and how
// the last ones went. Cancelled tasks are left out: a dissolved team or
// a replan is not the role's doing.
type Reliability struct {
	GuildID   string
	ChannelID string
	Role      string
	// Tasks counts the role's ended tasks in the window; Done, Failed,
	// Blocked, NeedInfo and Timeout split them by outcome.
	Tasks, Done, Failed, Blocked, NeedInfo, Timeout int
	// Median and P90 are of the ended tasks' time from their first
	// claim to their end.
	Median, P90 time.Duration
	// TokensPerTask is the mean of the tasks' prompt and completion
	// tokens.
	TokensPerTask int64
	// LastFailure is why the latest task that failed, timed out or was
	// blocked did (its error, or the worker's reason: model text, to
	// be escaped wherever it is shown), and LastFailureAt when it ended.
	LastFailure   string
	LastFailureAt time.Time
	// Trend is how the role's last tasks ended (at most TrendLen),
	// oldest first.
	Trend []TaskState
	// Open counts the role's tasks queued, running or waiting for an
	// approval now, in the channel.
	Open int
	// Reviewed counts the role's done tasks whose turn's reply a
	// reviewer judged (REVIEW_PASSED or REVIEW_REVISED), and Revised
	// those it sent back.
	Reviewed, Revised int
}

// ReliabilityQuery selects the tasks whose records are read.
type ReliabilityQuery struct {
	// Guilds, when not nil, keeps the guilds listed (an empty list keeps
	// none): what a server admin may see.
	Guilds []string
	// Channel, when set, keeps one channel; Roles, when not nil, those
	// roles.
	Channel string
	Roles   []string
	// Since is the window's start: the tasks that ended after it count.
	Since time.Time
}

// ReliabilityWindow is the window /team and the dashboard read roles'
// records over by default.
const ReliabilityWindow = 7 * 24 * time.Hour

// ReliabilityLine sums a record up in one line: its tasks, the share
// done and what went wrong, the median and p90 time, tokens per task.
// It carries no model text (the last failure's reason is left out).
func ReliabilityLine(r Reliability) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s, %.0f%% done", r.Tasks, plural(r.Tasks, "task", "tasks"), 100*r.Share(TaskDone))
	for _, c := range []struct {
		n    int
		what string
	}{{r.Failed, "failed"}, {r.Timeout, "timed out"}, {r.Blocked, "blocked"}, {r.NeedInfo, "asked"}} {
		if c.n > 0 {
			fmt.Fprintf(&b, ", %d %s", c.n, c.what)
		}
	}
	fmt.Fprintf(&b, " · median %s, p90 %s · %s tokens/task", Elapsed(r.Median), Elapsed(r.P90), Tokens(r.TokensPerTask))
	if r.Open > 0 {
		fmt.Fprintf(&b, " · %d open now", r.Open)
	}
	if r.Reviewed > 0 {
		fmt.Fprintf(&b, " · %d reviewed, %d sent back", r.Reviewed, r.Revised)
	}
	return b.String()
}

// TrendLen is how many of a role's latest tasks Reliability.Trend shows.
const TrendLen = 20

// Share is the fraction of the role's tasks that ended in state s.
func (r Reliability) Share(s TaskState) float64 {
	if r.Tasks == 0 {
		return 0
	}
	n := 0
	switch s {
	case TaskDone:
		n = r.Done
	case TaskFailed:
		n = r.Failed
	case TaskBlocked:
		n = r.Blocked
	case TaskNeedInfo:
		n = r.NeedInfo
	case TaskTimeout:
		n = r.Timeout
	}
	return float64(n) / float64(r.Tasks)
}

// RoleTrack is what the master is told of a member before it decides:
// how the role's last tasks in the channel ended (at most
// TrackLen, cancelled ones aside). It is read with the roster, in the
// same statement, so it costs a decision no statement of its own.
type RoleTrack struct {
	Last                               int // tasks counted
	Failed, Timeout, Blocked, NeedInfo int
}

// TrackLen is how many of a role's latest tasks RoleTrack counts.
const TrackLen = 10

// reliabilityNote is the master's pre-send check: one line per member
// that failed, timed out or was blocked in its last tasks, or is blocked
// in this turn now, so that it does not pile work on it. "" when no
// member has anything to flag. Bounded: a line per roster role, each of
// a fixed form (role names are at most 32 characters).
func reliabilityNote(roster []Role, tracks map[string]RoleTrack, turn *Turn, tasks []Task) string {
	now := map[string]MemberState{}
	for _, m := range Members(roster, turn, tasks) {
		now[m.Role.Name] = m.State
	}
	var lines []string
	for _, r := range roster {
		var parts []string
		tr := tracks[r.Name]
		if bad := tr.Failed + tr.Timeout; bad > 0 {
			why := "errors"
			switch {
			case tr.Failed == 0:
				why = "timeouts"
			case tr.Timeout > 0:
				why = fmt.Sprintf("%d timed out", tr.Timeout)
			}
			parts = append(parts, fmt.Sprintf("%d of its last %d tasks failed (%s)", bad, tr.Last, why))
		}
		if tr.Blocked > 0 {
			parts = append(parts, fmt.Sprintf("%d of its last %d ended blocked", tr.Blocked, tr.Last))
		}
		if now[r.Name] == MemberBlocked {
			parts = append(parts, "blocked now")
		}
		if len(parts) == 0 {
			continue
		}
		lines = append(lines, "- "+r.Name+": "+strings.Join(parts, "; "))
	}
	if len(lines) == 0 {
		return ""
	}
	return "\nHow members did lately (their recent tasks in this channel): do not pile work on a member that is\n" +
		"blocked or failing; give it what it lacks, pick another member, or do without it.\n" +
		strings.Join(lines, "\n") + "\n"
}
