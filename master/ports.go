package master

import (
	"context"
	"errors"
	"time"
)

// ErrPermanent marks a delivery error that retrying cannot fix (a deleted
// channel, missing permissions). Messengers wrap such errors with it.
var ErrPermanent = errors.New("permanent delivery error")

// Store is what the orchestrator needs from Postgres. Every method that
// changes state is one transaction; the guarded ones return ErrStale when
// their guard no longer holds.
type Store interface {
	// StartSession creates the session with its roster and kickoff message
	// in one transaction, and with brief, when not empty, a first turn
	// that sets the team to work at once (a dispatched team). It returns
	// ErrSessionActive when the thread has a session already.
	StartSession(ctx context.Context, s Session, roster []Role, kickoff, brief string) (Session, error)
	// ActiveSession returns the active session of a thread, or ErrNotFound.
	ActiveSession(ctx context.Context, threadID string) (Session, error)
	// CatchUpPoints lists every active session with where its thread's
	// catch-up starts.
	CatchUpPoints(ctx context.Context) ([]CatchUpPoint, error)
	// Notice queues a message in an active session's thread.
	Notice(ctx context.Context, sessionID int64, text string) error
	Session(ctx context.Context, id int64) (Session, error)
	Roster(ctx context.Context, sessionID int64) ([]Role, error)

	// RecordTurn stores a user message as a queued turn, idempotently on
	// its message id: created is false when the message was seen before.
	// A turn of the session that waited for the user's answer is closed.
	RecordTurn(ctx context.Context, t Turn) (turn Turn, created bool, err error)

	// PendingSessions lists active sessions whose oldest open turn needs
	// the master now (not started, or every task of its round has ended)
	// and whose master lease is free or held by owner.
	PendingSessions(ctx context.Context, owner string) ([]int64, error)
	// AcquireMaster leases the session's master to owner; false when
	// another owner holds a live lease. Calling it again extends the lease.
	AcquireMaster(ctx context.Context, sessionID int64, owner string, lease time.Duration) (bool, error)
	ReleaseMaster(ctx context.Context, sessionID int64, owner string) error
	// OpenTurn returns the session's oldest queued or running turn,
	// starting it (queued → running) if needed; ErrNotFound when none.
	OpenTurn(ctx context.Context, sessionID int64) (Turn, error)
	TurnTasks(ctx context.Context, turnID int64) ([]Task, error)
	// History returns up to limit finished turns of the session before
	// turn beforeID, oldest first, with what the team answered.
	History(ctx context.Context, sessionID, beforeID int64, limit int) ([]Exchange, error)

	// Finish ends the guarded turn: it writes the outbox parts and moves
	// the turn to state (done, or waiting for a question).
	Finish(ctx context.Context, g Guard, f Finish) error
	// FailTurn counts a failed decision on the guarded turn (any round)
	// and puts its next one off by retryIn; it returns the count.
	FailTurn(ctx context.Context, g Guard, retryIn time.Duration) (int, error)
	// CountMasterCall counts a master model call on the guarded turn
	// before it is made; ErrCeiling when max calls were made already.
	CountMasterCall(ctx context.Context, g Guard, max int) (int, error)
	// AbandonTurn ends the guarded turn (any round) with text as its
	// reply unless it has one: the last resort.
	AbandonTurn(ctx context.Context, g Guard, text string) error
	// Delegate enqueues a round of tasks and advances the turn's round.
	Delegate(ctx context.Context, g Guard, tasks []NewTask, usage Usage) ([]int64, error)
	// ResumeTask answers a need_info task of the guarded turn's round; it
	// is queued again with the answer.
	ResumeTask(ctx context.Context, g Guard, taskID int64, answer string, usage Usage) error
	// Replan replaces the session's roster: roles keep their prompt and
	// model when their name stays; queued tasks of removed roles are
	// cancelled. It returns the names removed.
	Replan(ctx context.Context, g Guard, roster []Role, usage Usage) (removed []string, err error)
	// ReportBack delivers a report of the guarded turn's session to its
	// report_to, exactly once (see NewReport).
	ReportBack(ctx context.Context, g Guard, r NewReport) (Report, error)
	// DispatchedByTurn returns the session a turn dispatched to a
	// channel, or ErrNotFound.
	DispatchedByTurn(ctx context.Context, turnID int64, channelID string) (Session, error)
	// ActiveSessions counts a guild's active sessions.
	ActiveSessions(ctx context.Context, guildID string) (int, error)
	// AddUsage charges tokens to the session.
	AddUsage(ctx context.Context, sessionID int64, u Usage) error

	// ActiveTurns lists running turns with their tasks, and ended turns
	// whose status message is not settled yet, for status messages.
	ActiveTurns(ctx context.Context) ([]TurnStatus, error)
	// SetStatusMessage records the turn's status message.
	SetStatusMessage(ctx context.Context, turnID int64, messageID string) error
	// SettleStatus records that the turn's status message shows its end.
	SettleStatus(ctx context.Context, turnID int64) error
}

// Guard names the state a decision was made in: it applies only while the
// turn is still running in that round and owner still holds the master lease.
type Guard struct {
	SessionID int64
	TurnID    int64
	Round     int
	Owner     string
}

// Finish is how a turn ends: a reply or a question, split into parts.
type Finish struct {
	Kind  OutKind   // OutReply or OutQuestion
	State TurnState // TurnDone, or TurnWaiting after a question
	Parts []string  // each at most MaxMessageLen characters
	Usage Usage
}

// Exchange is one finished turn as the master remembers it.
type Exchange struct {
	TurnID   int64
	AuthorID string
	Message  string
	Answer   string // the reply or question the team posted
	Asked    bool   // the answer was a question to the user
	Results  []Task // the turn's task results, kept when it ended in a question
}

// OutKind is what an outbox message is.
type OutKind string

// Outbox kinds.
const (
	OutReply    OutKind = "reply"
	OutQuestion OutKind = "question"
	OutKickoff  OutKind = "kickoff"
	OutNotice   OutKind = "notice"
	OutSummary  OutKind = "summary"
	OutReport   OutKind = "report"
)

// OutMessage is a message the team will post, durable before it is sent.
type OutMessage struct {
	ID        int64
	SessionID int64
	TurnID    int64
	Kind      OutKind
	ChannelID string
	// ReplyTo is the message this one answers; only a reply's first part
	// carries it.
	ReplyTo  string
	Content  string
	Part     int
	Nonce    string // unique, at most 25 characters
	Attempts int    // sends tried so far
	// CreatedAt is when the message was queued.
	CreatedAt time.Time
	// MaybeSentAt is the first time a send of this message may have
	// reached Discord without being recorded; zero when none may have.
	MaybeSentAt time.Time
}

// TurnStatus is a running turn with what its team is doing.
type TurnStatus struct {
	Turn      Turn
	ThreadID  string
	Tasks     []Task
	Progress  map[int64]Progress // latest PROGRESS per task id
	StartedAt time.Time
	// RepliedAt is when the reply's first part was sent; zero before.
	RepliedAt time.Time
}

// Progress is a worker's latest progress note.
type Progress struct {
	Percent int
	Note    string
}

// Messenger posts into Discord. Only the master's runtime holds one.
type Messenger interface {
	// Send posts m with its nonce, pinging nobody but the replied-to user.
	Send(ctx context.Context, m OutMessage) (messageID string, err error)
	// Find looks for m among the bot's recent messages in its channel,
	// posted since m.MaybeSentAt, and returns its id, or "" when it is
	// not there.
	Find(ctx context.Context, m OutMessage) (messageID string, err error)
	// Edit replaces the content of a message the bot posted.
	Edit(ctx context.Context, channelID, messageID, content string) error
	// Typing shows the typing indicator in a channel for a few seconds.
	Typing(ctx context.Context, channelID string) error
	// Archive archives a thread.
	Archive(ctx context.Context, threadID string) error
}
