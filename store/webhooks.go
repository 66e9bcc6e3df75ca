package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// EnableWebhooks makes every change an outside dispatcher hears about
// (session started, reported, blocked, dissolved) write its webhook event
// in the change's own transaction. Call it once, before the store is used.
func (s *Store) EnableWebhooks(on bool) { s.webhooks.Store(on) }

// enqueueWebhook writes a webhook event about sessionID within tx, when
// webhooks are enabled. data is the event's "data" object, from one of
// master's builders (master.StartedData…).
func (s *Store) enqueueWebhook(ctx context.Context, tx pgx.Tx, sessionID int64, kind master.WebhookEventKind, data any) error {
	if !s.webhooks.Load() {
		return nil
	}
	mark(tx, WakeWebhooks)
	return enqueueEvent(ctx, tx, sessionID, kind, data, "")
}

// enqueueCallback writes an event about sessionID for its callback URL
// within tx (whether or not the deployment's webhooks are enabled), when
// the session has one.
func enqueueCallback(ctx context.Context, tx pgx.Tx, sess master.Session, kind master.WebhookEventKind, data any) error {
	if sess.CallbackURL == "" {
		return nil
	}
	mark(tx, WakeWebhooks)
	return enqueueEvent(ctx, tx, sess.ID, kind, data, sess.CallbackURL)
}

// enqueueEvent writes an event for url ("" for CALLON_WEBHOOK_URL).
func enqueueEvent(ctx context.Context, tx pgx.Tx, sessionID int64, kind master.WebhookEventKind, data any, url string) error {
	var sess master.Session
	var at time.Time
	if err := tx.QueryRow(ctx, `SELECT id, guild_id, channel_id, thread_id, now() FROM sessions WHERE id = $1`, sessionID).
		Scan(&sess.ID, &sess.GuildID, &sess.ChannelID, &sess.ThreadID, &at); err != nil {
		return fmt.Errorf("webhook %s: %w", kind, err)
	}
	body, err := marshalJSON(master.NewWebhookEnvelope(kind, sess, at, data))
	if err != nil {
		return fmt.Errorf("webhook %s: %w", kind, err)
	}
	// The body carries the event's own id: take it from the sequence first.
	if _, err := tx.Exec(ctx, `
		WITH next AS (SELECT nextval(pg_get_serial_sequence('webhook_events', 'id')) AS id)
		INSERT INTO webhook_events (id, session_id, event, payload, url)
		OVERRIDING SYSTEM VALUE
		SELECT next.id, $1, $2, jsonb_set($3::jsonb, '{id}', to_jsonb(next.id)), nullif($4, '') FROM next`,
		sessionID, kind, body, url); err != nil {
		return fmt.Errorf("webhook %s: %w", kind, err)
	}
	return nil
}

// enqueueBlocked writes a session.blocked event when a turn ends in a
// reply while tasks of its current round are blocked: the master told the
// user rather than reassigning the work.
func (s *Store) enqueueBlocked(ctx context.Context, tx pgx.Tx, turn master.Turn, kind master.OutKind) error {
	if !s.webhooks.Load() || kind != master.OutReply {
		return nil
	}
	rows, err := tx.Query(ctx, `
		SELECT id, role, coalesce(nullif(result, ''), error, '') FROM tasks
		WHERE turn_id = $1 AND round = $2 AND state = 'blocked' ORDER BY id`, turn.ID, turn.Round)
	if err != nil {
		return fmt.Errorf("webhook blocked: %w", err)
	}
	tasks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.BlockedTask, error) {
		var b master.BlockedTask
		err := r.Scan(&b.Task, &b.Role, &b.Reason)
		return b, err
	})
	if err != nil {
		return fmt.Errorf("webhook blocked: %w", err)
	}
	if len(tasks) == 0 {
		return nil
	}
	return s.enqueueWebhook(ctx, tx, turn.SessionID, master.WebhookSessionBlocked, master.BlockedData(turn, tasks))
}

// ClaimWebhooks leases up to n due pending webhook events, oldest due
// first, and counts an attempt on each. A claimed event is not due again
// before the lease ends, so a crashed sender's events come back after it.
func (s *Store) ClaimWebhooks(ctx context.Context, n int, lease time.Duration) ([]master.WebhookEvent, error) {
	rows, err := s.pool.Query(ctx, `
		WITH claim AS (
			SELECT id FROM webhook_events
			WHERE state = 'pending' AND next_attempt_at <= now()
			ORDER BY next_attempt_at, id
			LIMIT $1
			FOR UPDATE SKIP LOCKED
		)
		UPDATE webhook_events w SET attempts = w.attempts + 1, next_attempt_at = now() + $2::interval
		FROM claim WHERE w.id = claim.id
		RETURNING w.id, w.session_id, w.event, w.payload, w.attempts, coalesce(w.url, '')`, n, lease)
	if err != nil {
		return nil, fmt.Errorf("claim webhooks: %w", err)
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.WebhookEvent, error) {
		var ev master.WebhookEvent
		err := r.Scan(&ev.ID, &ev.SessionID, &ev.Kind, &ev.Body, &ev.Attempt, &ev.URL)
		return ev, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim webhooks: %w", err)
	}
	return evs, nil
}

// RecordWebhook records how a delivery attempt ended, with a WEBHOOK
// signal on the event's session, in one transaction: delivered, given up
// (failed), or pending again after r.RetryIn. An interrupted attempt is
// handed back uncounted and due at once, without a signal.
// master.ErrStale when the event was claimed again since, or has ended.
func (s *Store) RecordWebhook(ctx context.Context, r master.WebhookResult) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("record webhook: %w", err)
	}
	defer tx.Rollback(ctx)
	if r.Interrupted {
		tag, err := tx.Exec(ctx, `UPDATE webhook_events SET attempts = attempts - 1, next_attempt_at = now()
			WHERE id = $1 AND attempts = $2 AND state = 'pending'`, r.EventID, r.Attempt)
		if err != nil {
			return fmt.Errorf("record webhook: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("record webhook %d attempt %d: %w", r.EventID, r.Attempt, master.ErrStale)
		}
		return tx.Commit(ctx)
	}
	var sessionID int64
	var kind master.WebhookEventKind
	err = tx.QueryRow(ctx, `
		UPDATE webhook_events SET
			state = CASE WHEN $3 THEN 'delivered' WHEN $4 THEN 'failed' ELSE 'pending' END,
			delivered_at = CASE WHEN $3 THEN now() END,
			next_attempt_at = CASE WHEN $3 OR $4 THEN next_attempt_at ELSE now() + $5::interval END,
			last_status = nullif($6, 0), last_error = nullif($7, '')
		WHERE id = $1 AND attempts = $2 AND state = 'pending'
		RETURNING session_id, event`,
		r.EventID, r.Attempt, r.Delivered, r.Failed && !r.Delivered, r.RetryIn, r.Status, r.Error).Scan(&sessionID, &kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("record webhook %d attempt %d: %w", r.EventID, r.Attempt, master.ErrStale)
	}
	if err != nil {
		return fmt.Errorf("record webhook: %w", err)
	}
	payload := map[string]any{"event": kind, "event_id": r.EventID, "status": r.Status, "attempt": r.Attempt, "delivered": r.Delivered}
	if r.Error != "" {
		payload["error"] = r.Error
	}
	switch {
	case r.Failed && !r.Delivered:
		payload["failed"] = true
	case !r.Delivered:
		payload["retry_in_ms"] = r.RetryIn.Milliseconds()
	}
	b, err := marshalJSON(payload)
	if err != nil {
		return fmt.Errorf("record webhook: %w", err)
	}
	// No wake: nothing a master or a worker waits for has changed.
	if _, err := addSignal(ctx, tx, sessionID, 0, master.SignalWebhook, b); err != nil {
		return fmt.Errorf("record webhook: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("record webhook: %w", err)
	}
	return nil
}
