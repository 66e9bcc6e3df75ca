package master

import (
	"context"
	"time"
)

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
	// Personas, when set, has one entry per part: the member it is
	// posted as, nil for callon's own voice.
	Personas []*Persona
}

// Exchange is one finished turn as the master remembers it.
type Exchange struct {
	TurnID    int64
	AuthorID  string
	AuthorBot bool // a trusted bot wrote the message
	Message   string
	Answer    string // the reply or question the team posted
	Asked     bool   // the answer was a question to the user
	Results   []Task // the turn's task results, kept when it ended in a question
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
	// OutApproval asks a person to approve or deny a call of a tool,
	// with buttons.
	OutApproval OutKind = "approval"
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
	ReplyTo string
	// Mention is the one user the message may ping besides the author it
	// replies to (allowed_mentions lists only it): the bot a report is
	// for. "" for nobody.
	Mention string
	Content string
	// Buttons are shown under the content, in one row; none for most
	// messages.
	Buttons []Button
	// File is attached to the message when it has a Name (an approval
	// request's arguments that do not fit in its text).
	File File
	Part int
	// Persona, when set, posts the message under a member's name and
	// picture (a part of a reply presented as an exchange); nil for
	// callon's own voice.
	Persona  *Persona
	Nonce    string // unique, at most 25 characters
	Attempts int    // sends tried so far
	// CreatedAt is when the message was queued.
	CreatedAt time.Time
	// MaybeSentAt is the first time a send of this message may have
	// been posted without being recorded; zero when none may have.
	MaybeSentAt time.Time
}

// TurnStatus is a running turn with what its team is doing.
type TurnStatus struct {
	Turn     Turn
	ThreadID string
	Tasks    []Task
	Progress map[int64]Progress // latest PROGRESS per task id
	// Calls are the tool calls under way, or waiting for approval, by
	// task id.
	Calls     map[int64]ToolActivity
	StartedAt time.Time
	// RepliedAt is when the reply's first part was sent; zero before.
	RepliedAt time.Time
	// Spent is the session's usage by model, read for a turn whose
	// status message settles.
	Spent []Usage
}

// ToolActivity is a tool call a task is making, or waits to make.
type ToolActivity struct {
	Tool string // as the model called it
	Args string // shortened
}

// Progress is a worker's latest progress note.
type Progress struct {
	Percent int
	Note    string
}

// Messenger posts into a team's thread (bot's) or its terminal. Only the
// master's runtime holds one.
type Messenger interface {
	// Send posts m with its nonce, pinging nobody but the replied-to user.
	Send(ctx context.Context, m OutMessage) (messageID string, err error)
	// Find looks for m among the bot's recent messages in its channel,
	// posted since m.MaybeSentAt, and returns its id, or "" when it is
	// not there.
	Find(ctx context.Context, m OutMessage) (messageID string, err error)
	// Edit replaces the content of a message the bot posted, and removes
	// its buttons: an edited message has been settled.
	Edit(ctx context.Context, channelID, messageID, content string) error
	// Typing shows the typing indicator in a channel for a few seconds.
	Typing(ctx context.Context, channelID string) error
	// Archive archives a thread.
	Archive(ctx context.Context, threadID string) error
}

// File is a file attached to a message.
type File struct {
	Name string
	Data []byte
}

// The reads and writes several ports need are declared once, here, and
// embedded in each port that needs them.

// SessionFinder finds a thread's team.
type SessionFinder interface {
	// ActiveSession returns the active session of a thread, or ErrNotFound.
	ActiveSession(ctx context.Context, threadID string) (Session, error)
}

// AccessReader reads a guild's allow lists.
type AccessReader interface {
	// Access returns a guild's allow lists.
	Access(ctx context.Context, guildID string) (Access, error)
}

// TurnRecorder records messages as turns.
type TurnRecorder interface {
	// RecordTurn stores a user message as a queued turn, idempotently on
	// its message id: created is false when the message was seen before.
	// A turn of the session that waited for the user's answer is closed.
	// A turn given as refused, or that admission refuses, is recorded
	// refused (its State says so), with a notice once per burst. The
	// message's files are recorded with it.
	RecordTurn(ctx context.Context, t Turn, a Admission) (turn Turn, created bool, err error)
}

// RosterReader reads a team's roles.
type RosterReader interface {
	// Roster returns a session's roles.
	Roster(ctx context.Context, sessionID int64) ([]Role, error)
}
