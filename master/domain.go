// Package master is callon's domain core. It decides; the adapters speak.
// It owns:
//
//   - the types of a team and their states: Session, Role, Turn, Task,
//     Signal, Attachment, Approval (domain.go, surface.go);
//   - starting a team, one path for every entrance (launch.go), and the
//     session service that routes messages to turns, addresses roles and
//     catches up what was missed (service.go, address.go);
//   - the orchestrator: one turn at a time per session, its prompt and
//     tools, fan-out and fan-in, replanning, reports and dispatch;
//   - the background runners that decide and send: the outbox, the file
//     fetcher, the webhook sender, dormancy, retention;
//   - the commands (/team's view, /replan, /dissolve, /roles, /budget,
//     /access) and approvals (who decides, the request's arguments);
//   - the limits: caps, admission, allow lists, trusted bots, budgets, the
//     Meter every model call goes through, prices;
//   - the inbound API's domain and the webhook events' payloads;
//   - the user-safe Error, and every port it consumes, each declared by
//     the code that calls it (OrchestratorStore, SessionStore, Messenger,
//     Toolbox, LLM, Metrics…).
//
// What it needs to know of the chat platform is in discord.go; the words
// people read of its values are bot/render's. It imports of callon only
// internal/proc.
package master

import (
	"encoding/json"
	"time"
)

// SessionState is the life cycle of a team session.
type SessionState string

// Session states.
const (
	SessionActive    SessionState = "active"
	SessionDissolved SessionState = "dissolved"
)

// Session is one team bound to one thread (or a terminal's chat).
type Session struct {
	ID        int64
	GuildID   string
	ChannelID string // the text channel the thread lives in
	ThreadID  string
	OwnerID   string
	Goal      string
	State     SessionState
	ReportTo  string // channel or thread id to report back to; "" for none
	// DispatchedBy is the session whose master started this one; 0 for
	// a session started with /callon. DispatchDepth counts those links.
	DispatchedBy   int64
	DispatchedTurn int64 // the dispatching turn
	DispatchDepth  int
	// RequestedByBot is the trusted bot that started the session by
	// mentioning callon in ChannelID, and RequestMessageID its message:
	// the team's reports mention that bot (and reply to its message when
	// they land in ChannelID). "" for a session a person started.
	RequestedByBot   string
	RequestMessageID string
	// APIKey is the idempotency key of the API request that started the
	// team; "" for a team started otherwise. CallbackURL, when set,
	// receives the team's reports.
	APIKey      string
	CallbackURL string
	Usage       Usage // tokens used by the session so far
	// Surface is where people talk to the team; AttachedTo, for a
	// terminal team, the chat process that shows it ("" when none does).
	Surface    Surface
	AttachedTo string
	// DormantSince is when the team went dormant (idle, or its thread
	// archived): it counts against no cap until a message wakes it. Zero
	// while it is awake.
	DormantSince time.Time
	// Features are what the team does beyond its one voice (personas,
	// memory, review), fixed when it starts.
	Features  Features
	CreatedAt time.Time
	EndedAt   time.Time // zero while active
}

// Role is a member of a team: a specialist with its own prompt and model.
type Role struct {
	Name        string // lowercase slug, unique within a roster
	Description string // one line; the master routes by it
	Prompt      string // the role's system prompt
	Model       string // "" means the configured worker model
	Temperature *float32
	MaxTokens   int
	Timeout     time.Duration // 0 means the configured task timeout
	// Tools is what the role's workers may call: "fetch_url",
	// "<server>.<tool>" or "<server>.*" for every tool of an MCP server.
	Tools []string
	// Avatar is the URL of the role's persona's picture (the roles
	// file's avatar:); "" for a generated one.
	Avatar string
}

// TurnState is the life cycle of a turn.
type TurnState string

// Turn states.
const (
	TurnQueued    TurnState = "queued"    // recorded; waits for earlier turns of its session
	TurnRunning   TurnState = "running"   // the master or its workers are on it
	TurnWaiting   TurnState = "waiting"   // the master asked the user; the next message answers
	TurnDone      TurnState = "done"      // the reply is in the outbox
	TurnCancelled TurnState = "cancelled" // the session ended first
	TurnRefused   TurnState = "refused"   // recorded but never answered (a limit)
)

// Turn is the work caused by one user message: every round of delegation
// and the one reply. Its origin (guild, channel, thread, message) lives on
// the turn, so the reply always goes where the message came from.
type Turn struct {
	ID        int64
	SessionID int64
	MessageID string // the id of the message that made the turn; unique
	GuildID   string
	ChannelID string // where the message was posted: the session's thread
	AuthorID  string
	// AuthorBot says a (trusted) bot wrote the message: the master is told
	// so, and a bot's turns per hour are capped.
	AuthorBot bool
	Content   string
	State     TurnState
	Round     int // the current round of delegation; 0 before the first
	// StatusMessageID is the message showing the team's progress.
	StatusMessageID string
	// ReplyMessageID is the id of the reply's first part, once sent.
	ReplyMessageID string
	// ReportID is set on a turn started by another team's report.
	ReportID int64
	// MasterFailures counts the master's decisions on this turn that
	// failed: the model could not be reached, or a step failed.
	MasterFailures int
	// MasterCalls counts the master's model calls for this turn.
	MasterCalls int
	// NotBefore puts the turn's next decision off until then.
	NotBefore time.Time
	// AddressedTo is the role the message was addressed to ("@planner …"
	// or "planner: …"); "" when none.
	AddressedTo string
	// Attachments are the message's files, given when the turn is
	// recorded (see AttachmentPolicy.Plan); a turn read back does not
	// carry them: they are read on their own, with their content.
	Attachments []Attachment
	// Echo, given when the turn is recorded, is posted in the thread
	// before the turn is answered, if it is admitted: the text of a
	// message that came through the API, so people see what the team
	// answers. A turn read back does not carry it.
	Echo      string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TaskState is the life cycle of a task.
type TaskState string

// Task states. Everything but queued, running and approval is terminal.
const (
	TaskQueued  TaskState = "queued"
	TaskRunning TaskState = "running"
	// TaskApproval is a task paused until a person approves or denies a
	// call of one of its tools: held by no worker (no lease), open (its
	// round waits for it), queued again once the call is decided.
	TaskApproval  TaskState = "approval"
	TaskDone      TaskState = "done"
	TaskFailed    TaskState = "failed"
	TaskBlocked   TaskState = "blocked"
	TaskNeedInfo  TaskState = "need_info"
	TaskCancelled TaskState = "cancelled"
	TaskTimeout   TaskState = "timeout"
)

// Terminal reports whether a task in state s has ended.
func (s TaskState) Terminal() bool { return s != TaskQueued && s != TaskRunning && s != TaskApproval }

// Task is one scoped subtask for one role, in one round of one turn.
type Task struct {
	ID          int64
	SessionID   int64
	TurnID      int64
	Round       int
	Role        string
	Instruction string
	DependsOn   []int64 // ids of tasks whose results this one needs
	State       TaskState
	Attempt     int
	WorkerID    string
	LeaseUntil  time.Time
	Result      string
	Error       string
	// QA holds the questions the task asked (need_info) and their
	// answers; the last answer is empty while the task waits for one.
	QA []QA
	// Attachments are the ids of the turn's files the master handed to
	// the task.
	Attachments []int64
	Usage       Usage
	CreatedAt   time.Time
	StartedAt   time.Time // zero until first claimed
	EndedAt     time.Time // zero until terminal
	// Input, when set, is the task's input read with its claim (a first
	// attempt that depends on no task and was handed no file: all of its
	// input fits the claim's round trip).
	Input *TaskInput
}

// QA is a worker's question and the answer it got.
type QA struct {
	Question string `json:"q"`
	Answer   string `json:"a"`
}

// Question is the task's unanswered question, if it waits for one.
func (t Task) Question() string {
	if t.State == TaskNeedInfo && len(t.QA) > 0 && t.QA[len(t.QA)-1].Answer == "" {
		return t.QA[len(t.QA)-1].Question
	}
	return ""
}

// NewTask is a task to enqueue. DependsOn holds indexes into the same
// batch, as the delegate tool expresses them.
type NewTask struct {
	Role        string
	Instruction string
	DependsOn   []int
	Attachments []int64 // ids of the turn's files the task is given
	// Notes are the ids of the channel's notes the task is given (read
	// when it runs: a note forgotten meanwhile is not).
	Notes []int64
}

// Outcome is how a worker ended a task.
type Outcome struct {
	State    TaskState // done, failed, blocked, need_info or timeout
	Result   string    // the worker's result (for blocked: why; for need_info: the work so far)
	Question string    // need_info: what the worker needs to know
	Error    string    // why it failed
	// Handoff, with State done, passes the work on: a task for another
	// role joins the same round, depending on this one.
	Handoff *Handoff
	Usage   Usage
}

// Handoff is a worker passing its work to another role.
type Handoff struct {
	Role        string
	Instruction string
}

// SignalKind names an event on the team's bus.
type SignalKind string

// Signal kinds.
const (
	SignalAck          SignalKind = "ACK"
	SignalProgress     SignalKind = "PROGRESS"
	SignalTaskComplete SignalKind = "TASK_COMPLETE"
	SignalBlocked      SignalKind = "BLOCKED"
	SignalNeedInfo     SignalKind = "NEED_INFO"
	SignalHandoff      SignalKind = "HANDOFF"
	SignalReport       SignalKind = "REPORT"
	SignalWebhook      SignalKind = "WEBHOOK"
	// SignalTool is one call of a tool, once it has ended: the tool, its
	// arguments shortened, how long it took, whether it failed, and the
	// size of its output.
	SignalTool SignalKind = "TOOL"
	// SignalNeedApproval is a task paused until a person decides on a
	// call of one of its tools.
	SignalNeedApproval SignalKind = "NEED_APPROVAL"
)

// Signal is one append-only event: written by the runtime in the same
// transaction as the state change it describes.
type Signal struct {
	ID        int64
	SessionID int64
	TaskID    int64 // 0 when the signal is about the session
	Kind      SignalKind
	Payload   json.RawMessage
	At        time.Time
	// Role is the role of the signal's task, where a reader needs it
	// (TeamView); "" otherwise.
	Role string
}

// TaskInput is everything a worker may see for one task: never the
// team's thread, never the other roles' prompts.
type TaskInput struct {
	Goal    string // the session's goal
	GuildID string // the session's guild: its tools are what it was granted
	Role    Role   // the task's role, with its prompt and model
	Deps    []Task // the tasks this one depends on, with their results
	// Team is the other roles a worker may hand off to: names and
	// descriptions only, never their prompts.
	Team []Role
	// Attachments are the files of the user's message the master handed
	// to the task, with their content.
	Attachments []Attachment
	// Calls are the calls of the task's tools that earlier attempts
	// recorded, in order: replayed, never made again.
	Calls []CallRecord
	// Notes are the channel's notes the master's memory gave the task,
	// those not forgotten since.
	Notes []Note
}

// TurnReads is what the master reads before a decision on a turn: the
// turn's tasks (by round, then id), its message's files in order with
// the content of those stored, the session, its roster, and the session's
// finished exchanges before the turn, oldest first, with what the team
// answered.
type TurnReads struct {
	Tasks       []Task
	Attachments []Attachment
	Session     Session
	Roster      []Role
	History     []Exchange
	// Tracks are how the roster's roles did in their last tasks in the
	// session's channel, by role name (read with the roster).
	Tracks map[string]RoleTrack
	// Notes are the session's channel's notes, when the team has memory
	// (read with the session).
	Notes []Note
}
