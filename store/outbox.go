package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// ClaimOutbox leases up to n pending messages, oldest first. A message is
// not claimed while an earlier pending message of its channel is leased
// or waiting to be retried, so parts never overtake each other.
func (s *Store) ClaimOutbox(ctx context.Context, owner string, n int, lease time.Duration) ([]master.OutMessage, error) {
	rows, err := s.pool.Query(ctx, `
		WITH claim AS (
			SELECT o.id FROM outbox o
			WHERE o.state = 'pending' AND (o.lease_until IS NULL OR o.lease_until < now())
			  AND NOT EXISTS (SELECT 1 FROM outbox e
			                  WHERE e.channel_id = o.channel_id AND e.state = 'pending'
			                    AND e.id < o.id AND e.lease_until >= now())
			ORDER BY o.id
			LIMIT $1
			FOR UPDATE SKIP LOCKED
		)
		UPDATE outbox o SET lease_until = now() + $2::interval
		FROM claim WHERE o.id = claim.id
		RETURNING o.id, coalesce(o.session_id, 0), coalesce(o.turn_id, 0), o.kind, o.channel_id,
		          coalesce(o.reply_to, ''), o.content, o.part, o.nonce, o.attempts`, n, lease)
	if err != nil {
		return nil, fmt.Errorf("claim outbox: %w", err)
	}
	msgs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.OutMessage, error) {
		var m master.OutMessage
		err := r.Scan(&m.ID, &m.SessionID, &m.TurnID, &m.Kind, &m.ChannelID, &m.ReplyTo, &m.Content, &m.Part, &m.Nonce, &m.Attempts)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim outbox: %w", err)
	}
	// RETURNING does not keep the claim's order.
	slices.SortFunc(msgs, func(a, b master.OutMessage) int { return cmp.Compare(a.ID, b.ID) })
	return msgs, nil
}

// MarkSent records a delivered message's Discord id; for a reply's first
// part, the turn records it too. Marking twice changes nothing.
func (s *Store) MarkSent(ctx context.Context, id int64, discordID string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("mark sent: %w", err)
	}
	defer tx.Rollback(ctx)
	var turnID *int64
	var kind string
	var part int
	err = tx.QueryRow(ctx, `
		UPDATE outbox SET state = 'sent', discord_message_id = $2, sent_at = now(), lease_until = NULL, error = NULL
		WHERE id = $1 AND state = 'pending'
		RETURNING turn_id, kind, part`, id, discordID).Scan(&turnID, &kind, &part)
	if err == pgx.ErrNoRows {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark sent: %w", err)
	}
	if turnID != nil && part == 0 && (kind == string(master.OutReply) || kind == string(master.OutQuestion)) {
		if _, err := tx.Exec(ctx, `UPDATE turns SET reply_message_id = $2, updated_at = now() WHERE id = $1`, *turnID, discordID); err != nil {
			return fmt.Errorf("mark sent: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("mark sent: %w", err)
	}
	return nil
}

// MarkUnsent records a failed delivery: the message is retried after
// retryIn, or marked failed when permanent.
func (s *Store) MarkUnsent(ctx context.Context, id int64, reason string, retryIn time.Duration, permanent bool) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE outbox SET attempts = attempts + 1, error = $2,
		       state = CASE WHEN $4 THEN 'failed' ELSE state END,
		       lease_until = CASE WHEN $4 THEN NULL ELSE now() + $3::interval END
		WHERE id = $1 AND state = 'pending'`, id, reason, retryIn, permanent)
	if err != nil {
		return fmt.Errorf("mark unsent: %w", err)
	}
	return nil
}
