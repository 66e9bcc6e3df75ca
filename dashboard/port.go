package dashboard

import (
	"context"
	"encoding/json"
	"time"

	"github.com/callonbot/callon/master"
)

// Store is what the dashboard reads: package store implements it. Every
// method that lists takes the guilds the viewer may see (nil: every
// guild, the operator's view); a team is read whole and checked by its
// guild before anything of it is shown.
type Store interface {
	// Overview reads each guild's day: its teams that have not ended,
	// and the counts since the UTC day's start.
	Overview(ctx context.Context, guilds []string, day time.Time) ([]GuildDay, error)
	// Team reads one team with its latest turns (at most turns) and
	// everything of theirs the timeline shows. master.ErrNotFound when
	// there is no such team.
	Team(ctx context.Context, sessionID int64, turns int) (Team, error)
	// Reliability reads roles' records (see master.Reliability).
	Reliability(ctx context.Context, q master.ReliabilityQuery) ([]master.Reliability, error)
	// SearchSignals reads signals newest first, at most q.Limit.
	SearchSignals(ctx context.Context, q SignalQuery) ([]SignalRow, error)
	// Changes reads what changed since a cursor, for the live updates:
	// the sessions of signals after it, and the sessions with messages
	// waiting to be posted.
	Changes(ctx context.Context, after int64) (Changes, error)
	// SessionGuilds maps session ids to their guilds.
	SessionGuilds(ctx context.Context, ids []int64) (map[int64]string, error)
	// Guilds lists, in order, the guilds that have or had teams, at most
	// limit: the servers the operator's signal search may pick.
	Guilds(ctx context.Context, limit int) ([]string, error)
}

// GuildDay is one server's overview.
type GuildDay struct {
	GuildID string
	Teams   []TeamRow // not ended, newest first (at most 200)
	// TurnsToday counts the turns recorded today, TurnsAnswered those
	// of them done; MasterCalls the master's model calls on them;
	// TasksToday the tasks that ended today (each at least one model
	// call).
	TurnsToday, TurnsAnswered, MasterCalls, TasksToday int
	// Usage is today's tokens by model, DailyBudget the guild's own
	// daily budget (0: the deployment's).
	Usage       []master.Usage
	DailyBudget int64
	// ApprovalsWaiting and OutboxPending count what waits for people
	// and for Discord now.
	ApprovalsWaiting, OutboxPending int
	// Errors counts, over the last hour, tasks that failed or timed out
	// and messages that could not be posted.
	TaskErrors, OutboxErrors int
	// TasksByHour counts today's ended tasks by UTC hour: done, and
	// anything else.
	DoneByHour, OtherByHour [24]int
}

// TeamRow is a team in the overview.
type TeamRow struct {
	ID        int64
	ChannelID string
	ThreadID  string
	OwnerID   string
	Goal      string
	State     master.SessionState // whatever states exist: read generically
	CreatedAt time.Time
	// LastActivity is the latest signal's or turn's time.
	LastActivity time.Time
	// Turn is the open turn's state, "" when none is open.
	Turn   master.TurnState
	Tokens int64
}

// Team is a team's page.
type Team struct {
	Session    master.Session
	Roster     []master.Role
	Turns      []TurnLine // newest first
	Reports    []Report
	Dispatched []master.Session
	// DispatchedBy is the team whose master started this one (ID 0:
	// none).
	DispatchedBy master.Session
	// Notes are its channel's memory (when the team has memory), most
	// recently remembered first: read only here; /memory edits them.
	Notes []master.Note
}

// TurnLine is one turn with what its timeline shows.
type TurnLine struct {
	Turn  master.Turn
	Tasks []master.Task
	Calls []ToolCall
	// Approvals are the requests of its tasks' calls.
	Approvals []Approval
	// RepliedAt is when its reply or question was posted (zero: not
	// yet); QueuedAt when it was written to the outbox.
	QueuedAt, RepliedAt time.Time
}

// ToolCall is one call of a task's tool.
type ToolCall struct {
	TaskID    int64
	Seq       int
	Name      string
	State     string // planned, started, done
	IsError   bool
	Duration  time.Duration
	Size      int
	StartedAt time.Time
	EndedAt   time.Time
}

// Approval is a request for a person's decision on a call.
type Approval struct {
	TaskID    int64
	Seq       int
	Tool      string
	State     string // pending, approved, denied, expired, cancelled
	CreatedAt time.Time
	DecidedAt time.Time
}

// Report is a hand-back between teams.
type Report struct {
	ID        int64
	FromID    int64 // the reporting team
	ToID      int64 // the team it was injected into; 0 when posted
	ToChannel string
	Summary   string // model text
	Delivery  string
	Final     bool
	CreatedAt time.Time
}

// SignalQuery selects signals.
type SignalQuery struct {
	Guilds    []string // nil: every guild
	SessionID int64    // 0: every team
	Kinds     []master.SignalKind
	Role      string
	Since     time.Time // zero: no bound
	Until     time.Time // zero: no bound
	BeforeID  int64     // 0: the newest; else ids below it (paging)
	Limit     int
}

// SignalRow is one signal with where it belongs.
type SignalRow struct {
	ID        int64
	SessionID int64
	GuildID   string
	ThreadID  string
	TaskID    int64
	Role      string
	Kind      master.SignalKind
	Payload   json.RawMessage
	At        time.Time
}

// Changes is what changed since a cursor.
type Changes struct {
	Cursor int64 // the newest signal's id read
	// Signals are the signals read: those after the cursor, and again
	// some before it (a signal may commit after a later one was read);
	// the hub reports each once.
	Signals []SignalRef
	// Waiting are the sessions with messages waiting to be posted.
	Waiting []int64
	// Overflow says more signals came than one read takes: every view
	// should be read again (the next read goes on from Cursor).
	Overflow bool
}

// SignalRef is a signal's id and its session.
type SignalRef struct {
	ID        int64
	SessionID int64
}
