package master

import (
	"context"
	"time"
)

// Metrics receives what the domain measures; package metrics exports it
// to Prometheus, and NoMetrics discards it. Every method is cheap and safe
// for concurrent use; none may block on I/O.
type Metrics interface {
	// TurnStarted counts a turn's first decision by the master.
	TurnStarted()
	// TurnEnded counts a turn that stopped running: answered, asked the
	// user, or ended with an apology. took runs from the message being
	// recorded to the end being queued in the outbox.
	TurnEnded(outcome TurnOutcome, took time.Duration)
	// ToolCalled counts a tool call of a model: caller is "master" or
	// "worker", result "ok" or "invalid" (malformed, or no such tool).
	ToolCalled(caller, tool, result string)
	// OutboxDelivered counts a delivery attempt of an outbox message
	// (result "sent", "retry" or "failed"); for a sent one, took is the
	// time from being queued to being posted.
	OutboxDelivered(kind OutKind, result string, took time.Duration)
	// WebhookDelivered counts a webhook delivery attempt by result
	// ("delivered", "retry", "failed" or "interrupted").
	WebhookDelivered(result string)
	// LimitHit counts a limit that refused or cut work short, by name
	// (see the Limit constants); other packages may add names.
	LimitHit(limit string)
}

// TurnOutcome is how a turn stopped running, for Metrics.
type TurnOutcome string

// Turn outcomes.
const (
	OutcomeReply    TurnOutcome = "reply"    // the team answered
	OutcomeQuestion TurnOutcome = "question" // the master asked the user; the turn may run again
	OutcomeApology  TurnOutcome = "apology"  // the master gave up: failures, ceiling, no usable decision
	OutcomeRefused  TurnOutcome = "refused"  // the model server refuses the master's calls
)

// Names of the limits counted by Metrics.LimitHit.
const (
	LimitMasterCalls    = "master_calls"    // CALLON_MAX_MASTER_CALLS: a turn's apology
	LimitRounds         = "rounds"          // CALLON_MAX_ROUNDS: the master must reply
	LimitSessionTokens  = "session_tokens"  // a team's token budget: the bot answers without the model
	LimitGuildTokens    = "guild_tokens"    // CALLON_GUILD_DAILY_TOKENS: the bot answers without the model
	LimitCatchUp        = "catch_up"        // CatchUpMax: messages refused by a catch-up
	LimitActiveSessions = "active_sessions" // CALLON_MAX_ACTIVE_SESSIONS: a dispatch refused
	LimitReportCap      = "report_cap"      // CALLON_REPORT_CAP: a report refused
	LimitDispatchDepth  = "dispatch_depth"  // CALLON_DISPATCH_DEPTH: a dispatch refused
)

// NoMetrics discards every measurement: the default wherever a Metrics
// is optional.
type NoMetrics struct{}

var _ Metrics = NoMetrics{}

// TurnStarted implements Metrics.
func (NoMetrics) TurnStarted() {}

// TurnEnded implements Metrics.
func (NoMetrics) TurnEnded(TurnOutcome, time.Duration) {}

// ToolCalled implements Metrics.
func (NoMetrics) ToolCalled(string, string, string) {}

// OutboxDelivered implements Metrics.
func (NoMetrics) OutboxDelivered(OutKind, string, time.Duration) {}

// WebhookDelivered implements Metrics.
func (NoMetrics) WebhookDelivered(string) {}

// LimitHit implements Metrics.
func (NoMetrics) LimitHit(string) {}

// Backlog is the work waiting in the database, over every process: the
// gauges of package metrics, read at most every few seconds.
type Backlog struct {
	Turns          map[TurnState]int // open turns: queued, running, waiting
	Tasks          map[TaskState]int // open tasks: queued, running
	ClaimableTasks int               // queued tasks a worker could claim now
	OutboxPending  int               // messages not yet posted
	OutboxOldest   time.Duration     // age of the oldest of them; 0 when none
	WebhookPending int               // webhook events not yet delivered or given up
	ActiveSessions int
	Processes      int // callon processes registered as alive
}

// BacklogStore reads the backlog.
type BacklogStore interface {
	Backlog(ctx context.Context) (Backlog, error)
}
