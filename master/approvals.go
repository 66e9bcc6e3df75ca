package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CallState is where a recorded call of a tool stands.
type CallState string

// Call states.
const (
	// CallPlanned: the model asked for the call; it has not been made.
	CallPlanned CallState = "planned"
	// CallStarted: the call was being made. Found so by a task run
	// again, it was interrupted: it may or may not have taken effect.
	CallStarted CallState = "started"
	// CallDone: the call was made (or refused), its result recorded.
	CallDone CallState = "done"
)

// CallRecord is one call of a tool by a worker's model, as recorded: a
// task run again replays it into its conversation rather than call again.
type CallRecord struct {
	TaskID  int64
	Seq     int    // the call's place among its task's calls, from 0
	Step    int    // the model call that asked for it, from 0
	CallID  string // the model's id for the call
	Name    string // as the model called it: fetch_url, <server>__<tool>
	Args    string // as the model wrote them
	State   CallState
	Result  string // done: what the model read
	IsError bool   // done: the call failed or was refused
	// Approval is the decision a person was asked for on the call; ""
	// when none was.
	Approval ApprovalState
}

// PlannedCall is a call of a tool the model asked for, to record before
// any call of its step is made.
type PlannedCall struct {
	CallID string
	Name   string
	Args   string
}

// ToolResult is what one call of a tool came to.
type ToolResult struct {
	Text     string // what the model reads: the output, or what went wrong
	IsError  bool
	Duration time.Duration
	Size     int // the output's length in bytes, before it was cut
}

// ApprovalState is where a person's decision on a call stands.
type ApprovalState string

// Approval states.
const (
	ApprovalPending   ApprovalState = "pending"
	ApprovalApproved  ApprovalState = "approved"
	ApprovalDenied    ApprovalState = "denied"
	ApprovalExpired   ApprovalState = "expired"   // nobody decided in time: denied
	ApprovalCancelled ApprovalState = "cancelled" // its task ended first
)

// Approval is a request for a person's decision on one call of a tool.
type Approval struct {
	ID        int64
	SessionID int64
	TaskID    int64
	Seq       int
	Role      string
	Tool      string // as the model called it
	Args      string // as the model wrote them, in full
	// Approvers are the role ids whose members alone decide (the
	// operator's approvers of the tool's server); none: the team's owner
	// and members who can manage threads.
	Approvers []string
	State     ApprovalState
	DecidedBy string // a user id; "" unless approved or denied
	DecidedAt time.Time
	ExpiresAt time.Time
	ChannelID string // the session's thread
	MessageID string // the request's message once posted; ""
}

// ApprovalAsk is what pausing a task for a person's approval records
// beside the call: who decides, how long they have, and the request's
// message, rendered beforehand for a pending request expiring Timeout
// from now (the store renders nothing; it adds the buttons, which carry
// the request's id).
type ApprovalAsk struct {
	// Approvers are the roles whose members alone decide (see
	// Approval.Approvers); none: the owner and thread managers.
	Approvers []string
	// Timeout is how long the request waits: undecided, it expires and
	// counts as denied.
	Timeout time.Duration
	Text    string
	// File holds the call's arguments when they do not fit in Text; none
	// when its Name is "".
	File File
}

// Custom id prefixes of an approval request's buttons; the request's id
// follows.
const (
	ApprovePrefix = "approve:"
	DenyPrefix    = "deny:"
)

// ApprovalButtons are the buttons of approval request id.
func ApprovalButtons(id int64) []Button {
	s := strconv.FormatInt(id, 10)
	return []Button{
		{Label: "Approve", Style: ButtonSuccess, CustomID: ApprovePrefix + s},
		{Label: "Deny", Style: ButtonDanger, CustomID: DenyPrefix + s},
	}
}

// ToolLabel is a tool's name as people read it: "server.tool" for a tool
// of an MCP server, as a role's tools list names it.
func ToolLabel(name string) string {
	if srv, tool, ok := strings.Cut(name, "__"); ok && srv != "" && tool != "" {
		return srv + "." + tool
	}
	return name
}

// ShortArgs is a call's arguments on one line, at most max characters.
func ShortArgs(args string, max int) string {
	return oneLine(args, max)
}

// CodeSpan shows s as inline code, on one line: backticks inside it
// would end the span, so they become look-alikes. Nothing in a code span
// renders as Markdown or a mention.
func CodeSpan(s string) string {
	s = strings.ReplaceAll(oneLine(s, MaxMessageLen), "`", "ˋ")
	if strings.TrimSpace(s) == "" {
		return "`{}`"
	}
	return "`" + s + "`"
}

// Denial is the result a model reads for a call that was not approved.
func Denial(a ApprovalState) string {
	switch a {
	case ApprovalDenied:
		return "A person denied this call: it was not made. Do without it, or report that you need it."
	case ApprovalCancelled:
		return "This call was not made: its approval was cancelled."
	default:
		return "Nobody approved this call in time, so it was not made. Do without it, or report that you need it."
	}
}

// ApprovalStore is what approvals need from Postgres.
type ApprovalStore interface {
	// Approval returns a request with its session; ErrNotFound.
	Approval(ctx context.Context, id int64) (Approval, Session, error)
	// DecideApproval records by's decision on a pending request and
	// queues its task again. A request already decided is returned as
	// it stands, unchanged.
	DecideApproval(ctx context.Context, id int64, approve bool, by string) (Approval, error)
	ApprovalSettler
}

// ApprovalSettler records that a request's message shows its outcome:
// the click's answer did (Approvals.Settled), or the settler.
type ApprovalSettler interface {
	SettleApproval(ctx context.Context, id int64) error
}

// Approvals lets people decide on the calls that need approval.
type Approvals struct {
	store ApprovalStore
	log   *slog.Logger
}

// NewApprovals returns the approvals service.
func NewApprovals(store ApprovalStore, logger *slog.Logger) *Approvals {
	return &Approvals{store: store, log: logger.With("component", "approvals")}
}

// NotDecider is what a member reads who may not decide on a request.
const NotDecider = "Only the member who started this team, or members who can manage threads, can approve or deny its calls."

// NotApprover is what a member reads who may not decide on a call whose
// server names approvers.
const NotApprover = "Calls of this tool are decided by the members the operator named as its approvers, and never by the person who started the team."

// MayDecide reports whether actor may decide on request ap of team s: with
// approvers named on it (the operator's, as its message says), a member
// holding one of those roles who is not the team's owner (nobody
// approves their own team's calls); otherwise the team's owner or a
// member who can manage threads. Bots never decide.
func MayDecide(s Session, ap Approval, actor Actor) bool {
	roles := ap.Approvers
	if len(roles) == 0 {
		return actor.MayManage(s)
	}
	if actor.Bot || actor.UserID == s.OwnerID {
		return false
	}
	for _, r := range actor.Roles {
		if slices.Contains(roles, r) {
			return true
		}
	}
	return false
}

// Decide records actor's decision on request id: approve, or deny. It
// returns the request as it now stands, already decided by someone else
// included. An *Error with ENotAllowed when actor may not decide (see
// MayDecide).
func (a *Approvals) Decide(ctx context.Context, id int64, approve bool, actor Actor) (Approval, error) {
	return a.DecideIn(ctx, 0, id, approve, actor)
}

// DecideIn is Decide where only the requests of one team are shown (a
// chat's terminal): a request of another team is not found there.
// sessionID 0 is any team.
func (a *Approvals) DecideIn(ctx context.Context, sessionID, id int64, approve bool, actor Actor) (Approval, error) {
	ap, s, err := a.store.Approval(ctx, id)
	if err == nil && sessionID != 0 && s.ID != sessionID {
		return Approval{}, Errorf(ENotFound, "This team has no request %d.", id)
	}
	if errors.Is(err, ErrNotFound) {
		return ap, &Error{Code: ENotFound, Message: "This request is gone: its team was removed.", Err: err}
	}
	if err != nil {
		return ap, fmt.Errorf("decide: %w", err)
	}
	if !MayDecide(s, ap, actor) {
		if len(ap.Approvers) > 0 {
			return ap, Errorf(ENotAllowed, NotApprover)
		}
		return ap, Errorf(ENotAllowed, NotDecider)
	}
	if ap.State != ApprovalPending {
		return ap, nil
	}
	ap, err = a.store.DecideApproval(ctx, id, approve, actor.UserID)
	if err != nil {
		return ap, fmt.Errorf("decide: %w", err)
	}
	a.log.Info("call decided", "approval_id", id, "session_id", ap.SessionID, "task_id", ap.TaskID, "tool", ap.Tool,
		"state", ap.State, "user_id", ap.DecidedBy)
	return ap, nil
}

// Settled records that request id's message shows its outcome, once the
// bot has edited it.
func (a *Approvals) Settled(ctx context.Context, id int64) error {
	return a.store.SettleApproval(ctx, id)
}
