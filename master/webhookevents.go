package master

import "time"

// callon's webhook payloads: a public format that outside dispatchers
// parse (docs/api.md, "Webhooks for outside dispatchers"). Fields are never
// renamed or removed; new ones may be added. The builders are pure: the
// store calls them inside the transaction of the change an event reports.

// WebhookEnvelope is the JSON body of every webhook event.
type WebhookEnvelope struct {
	// ID is the event's id, unique and increasing: receivers de-duplicate
	// on it and order by it.
	ID      int64            `json:"id"`
	Event   WebhookEventKind `json:"event"`
	Session WebhookSession   `json:"session"`
	At      string           `json:"at"` // RFC 3339 with nanoseconds, UTC
	Data    any              `json:"data"`
}

// WebhookSession names the team an event is about.
type WebhookSession struct {
	ID        int64  `json:"id"`
	GuildID   string `json:"guild_id"`
	ChannelID string `json:"channel_id"`
	ThreadID  string `json:"thread_id"`
	URL       string `json:"url"` // opens the thread (JumpURL)
}

// NewWebhookEnvelope wraps an event's data; the store sets ID.
func NewWebhookEnvelope(kind WebhookEventKind, s Session, at time.Time, data any) WebhookEnvelope {
	return WebhookEnvelope{
		Event: kind,
		Session: WebhookSession{ID: s.ID, GuildID: s.GuildID, ChannelID: s.ChannelID, ThreadID: s.ThreadID,
			URL: JumpURL(s.GuildID, s.ThreadID)},
		At:   at.UTC().Format(time.RFC3339Nano),
		Data: data,
	}
}

// StartedData is a session.started event's data.
func StartedData(s Session, roster []Role) map[string]any {
	return map[string]any{
		"goal":           s.Goal,
		"owner_id":       s.OwnerID,
		"report_to":      nullIfZero(s.ReportTo),
		"dispatched_by":  nullIfZero(s.DispatchedBy),
		"dispatch_depth": s.DispatchDepth,
		"roles":          RoleNames(roster),
	}
}

// ReportedData is a session.reported event's data.
func ReportedData(from Session, rep Report, r NewReport) map[string]any {
	return map[string]any{
		"report":       rep.ID,
		"from_session": from.ID,
		"from_thread":  from.ThreadID,
		"to_channel":   from.ReportTo,
		"to_session":   nullIfZero(rep.ToSession),
		"delivery":     rep.Delivery,
		"summary":      r.Summary,
		"final":        r.Final,
	}
}

// DissolvedData is a session.dissolved event's data.
func DissolvedData(summary string, cancelledTasks int, finalReport int64) map[string]any {
	return map[string]any{
		"summary":         summary,
		"cancelled_tasks": cancelledTasks,
		"final_report":    nullIfZero(finalReport),
	}
}

// BlockedTask is a blocked task in a session.blocked event.
type BlockedTask struct {
	Task   int64  `json:"task"`
	Role   string `json:"role"`
	Reason string `json:"reason"`
}

// maxBlockedReason bounds a blocked task's reason in a session.blocked
// event.
const maxBlockedReason = 2000

// BlockedData is a session.blocked event's data: the master answered
// turn while these tasks of its round were blocked.
func BlockedData(turn Turn, blocked []BlockedTask) map[string]any {
	roles := make([]string, len(blocked))
	for i := range blocked {
		roles[i] = blocked[i].Role
		blocked[i].Reason = Truncate(blocked[i].Reason, maxBlockedReason)
	}
	return map[string]any{
		"turn":       turn.ID,
		"message_id": turn.MessageID,
		"round":      turn.Round,
		"roles":      roles,
		"blocked":    blocked,
	}
}

// nullIfZero is nil for a zero value, so it marshals as JSON null.
func nullIfZero[T comparable](v T) any {
	var zero T
	if v == zero {
		return nil
	}
	return v
}
