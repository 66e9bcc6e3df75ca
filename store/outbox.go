package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// ClaimOutbox leases up to n pending messages of scope's sessions to
// owner, oldest first. Each channel's messages go out in order: a message
// is claimed only with every earlier pending message of its channel, so
// none is claimed while an earlier one is leased (here or in another
// process), waiting for a retry, or being claimed by someone else right
// now. A claim records that a send may follow (maybe_sent_at); each
// message returned carries the value from before this claim.
func (s *Store) ClaimOutbox(ctx context.Context, scope master.Scope, owner string, n int, lease time.Duration) ([]master.OutMessage, error) {
	rows, err := s.pool.Query(ctx, `
		WITH candidate AS (
			SELECT o.id, o.channel_id FROM outbox o
			WHERE o.state = 'pending' AND (o.lease_until IS NULL OR o.lease_until < now())
			  AND `+inScope+`
			ORDER BY o.id
			LIMIT $1
			FOR UPDATE SKIP LOCKED
		), claim AS (
			SELECT c.id FROM candidate c
			WHERE NOT EXISTS (SELECT 1 FROM outbox e
			                  WHERE e.channel_id = c.channel_id AND e.state = 'pending' AND e.id < c.id
			                    AND e.id NOT IN (SELECT id FROM candidate))
		)`+claimOutbox, n, lease, owner, scope.Of(), scope.Attached)
	msgs, err := collectOutbox(rows, err)
	if err != nil {
		return nil, fmt.Errorf("claim outbox: %w", err)
	}
	return msgs, nil
}

// ProbeOutbox leases to owner the one message of scope's sessions a probe
// tries while sends fail: the first pending message of its channel (never
// one behind another), one never tried if there is one, else the one
// tried least recently, whatever its retry wait. ok is false when there
// is none (or every channel's first is claimed by someone right now).
func (s *Store) ProbeOutbox(ctx context.Context, scope master.Scope, owner string, lease time.Duration) (m master.OutMessage, ok bool, err error) {
	rows, err := s.pool.Query(ctx, `
		WITH claim AS (
			SELECT o.id FROM outbox o
			WHERE o.state = 'pending' AND (o.lease_owner IS NULL OR o.lease_until < now())
			  AND `+inScope+`
			  AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.channel_id = o.channel_id AND e.state = 'pending' AND e.id < o.id)
			ORDER BY o.tried_at NULLS FIRST, o.id
			LIMIT $1
			FOR UPDATE SKIP LOCKED
		)`+claimOutbox, 1, lease, owner, scope.Of(), scope.Attached)
	msgs, err := collectOutbox(rows, err)
	if err != nil || len(msgs) == 0 {
		if err != nil {
			err = fmt.Errorf("probe outbox: %w", err)
		}
		return master.OutMessage{}, false, err
	}
	return msgs[0], true, nil
}

// inScope is the condition that an outbox row o belongs to a session of
// the scope in $4 (surface) and $5 (attached to; "" for any).
const inScope = `EXISTS (SELECT 1 FROM sessions s WHERE s.id = o.session_id AND s.surface = $4 AND ($5 = '' OR s.attached_to = $5))`

// ReleaseClaims gives back, untried, every pending message owner holds a
// claim on: at a stop, a claim cut short may have committed unseen.
func (s *Store) ReleaseClaims(ctx context.Context, owner string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE outbox SET lease_until = NULL, lease_owner = NULL
		WHERE state = 'pending' AND lease_owner = $1`, owner); err != nil {
		return fmt.Errorf("release outbox claims: %w", err)
	}
	return nil
}

// ShortenWaits brings every pending message's retry forward to at most
// within after its last failed try (to now for those tried longer ago),
// and returns how many it changed: Discord answered again, so what waited
// for it goes at once, while a message that keeps failing on its own
// (a channel of its own trouble) is still tried at most once per within.
func (s *Store) ShortenWaits(ctx context.Context, within time.Duration) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		WITH waiting AS (
			SELECT id FROM outbox
			WHERE state = 'pending' AND lease_owner IS NULL AND lease_until > now()
			ORDER BY id
			FOR UPDATE SKIP LOCKED
		)
		UPDATE outbox o SET lease_until = greatest(now(), coalesce(o.tried_at + $1::interval, now()))
		FROM waiting w
		WHERE o.id = w.id AND o.lease_until > greatest(now(), coalesce(o.tried_at + $1::interval, now()))`, within)
	if err != nil {
		return 0, fmt.Errorf("shorten outbox waits: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// claimOutbox ends a claim's statement, after a CTE claim(id) of the
// rows to lease: it leases them ($2, $3), records that a send may follow
// (maybe_sent_at), and returns them with the value from before.
const claimOutbox = `, before AS (
			SELECT o.id, o.maybe_sent_at FROM outbox o JOIN claim ON claim.id = o.id
		)
		UPDATE outbox o SET lease_until = now() + $2::interval, lease_owner = $3,
		       maybe_sent_at = coalesce(o.maybe_sent_at, now())
		FROM before WHERE o.id = before.id
		RETURNING o.id, coalesce(o.session_id, 0), coalesce(o.turn_id, 0), o.kind, o.channel_id,
		          coalesce(o.reply_to, ''), coalesce(o.mention, ''), o.content, o.buttons, o.part, o.nonce, o.attempts, o.created_at,
		          before.maybe_sent_at, coalesce(o.file_name, ''), o.file_data, o.persona`

// collectOutbox reads the rows of a claim, in id order.
func collectOutbox(rows pgx.Rows, err error) ([]master.OutMessage, error) {
	if err != nil {
		return nil, err
	}
	msgs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.OutMessage, error) {
		var m master.OutMessage
		var maybe *time.Time
		var buttons, persona []byte
		err := r.Scan(&m.ID, &m.SessionID, &m.TurnID, &m.Kind, &m.ChannelID, &m.ReplyTo, &m.Mention, &m.Content, &buttons, &m.Part, &m.Nonce,
			&m.Attempts, &m.CreatedAt, &maybe, &m.File.Name, &m.File.Data, &persona)
		if err != nil {
			return m, err
		}
		if m.Persona, err = scanPersona(persona); err != nil {
			return m, fmt.Errorf("outbox %d persona: %w", m.ID, err)
		}
		m.MaybeSentAt = orZero(maybe)
		if err := json.Unmarshal(buttons, &m.Buttons); err != nil {
			return m, fmt.Errorf("outbox %d buttons: %w", m.ID, err)
		}
		return m, nil
	})
	if err != nil {
		return nil, err
	}
	// RETURNING does not keep the claim's order.
	slices.SortFunc(msgs, func(a, b master.OutMessage) int { return cmp.Compare(a.ID, b.ID) })
	return msgs, nil
}

// ReleaseOutbox gives back a claimed message that was not tried: it is
// deliverable again at once (after the earlier messages of its channel),
// with no attempt counted and maybe_sent_at as it was before the claim.
func (s *Store) ReleaseOutbox(ctx context.Context, m master.OutMessage) error {
	var maybe *time.Time
	if !m.MaybeSentAt.IsZero() {
		maybe = &m.MaybeSentAt
	}
	if _, err := s.pool.Exec(ctx, `UPDATE outbox SET lease_until = NULL, lease_owner = NULL, maybe_sent_at = $2
		WHERE id = $1 AND state = 'pending'`, m.ID, maybe); err != nil {
		return fmt.Errorf("release outbox: %w", err)
	}
	return nil
}

// MarkSent records a delivered message's Discord id; for a reply's first
// part, the turn records it too, in the same statement. Marking twice
// changes nothing.
func (s *Store) MarkSent(ctx context.Context, id int64, discordID string) error {
	_, err := s.pool.Exec(ctx, `
		WITH sent AS (
			UPDATE outbox SET state = 'sent', discord_message_id = $2, sent_at = now(), lease_until = NULL,
			       lease_owner = NULL, error = NULL
			WHERE id = $1 AND state = 'pending'
			RETURNING turn_id, kind, part
		)
		UPDATE turns u SET reply_message_id = $2, updated_at = now()
		FROM sent WHERE u.id = sent.turn_id AND sent.part = 0 AND sent.kind IN ('reply', 'question')`, id, discordID)
	if err != nil {
		return fmt.Errorf("mark sent: %w", err)
	}
	return nil
}

// MarkUnsent records a delivery that was tried and failed: the message is
// retried after retryIn, or marked failed when permanent.
func (s *Store) MarkUnsent(ctx context.Context, id int64, reason string, retryIn time.Duration, permanent bool) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE outbox SET attempts = attempts + 1, error = $2, lease_owner = NULL, tried_at = now(),
		       state = CASE WHEN $4 THEN 'failed' ELSE state END,
		       lease_until = CASE WHEN $4 THEN NULL ELSE now() + $3::interval END
		WHERE id = $1 AND state = 'pending'`, id, cleanText(reason), retryIn, permanent)
	if err != nil {
		return fmt.Errorf("mark unsent: %w", err)
	}
	return nil
}

// queueNotice queues a message that belongs to no turn. Its nonce comes
// from its own id, so it is unique and short.
func queueNotice(ctx context.Context, tx pgx.Tx, sessionID int64, kind master.OutKind, channelID, content string) error {
	mark(tx, WakeOutbox)
	content = cleanText(content)
	_, err := tx.Exec(ctx, `
		WITH next AS (SELECT nextval(pg_get_serial_sequence('outbox', 'id')) AS id)
		INSERT INTO outbox (id, session_id, kind, channel_id, content, nonce)
		OVERRIDING SYSTEM VALUE
		SELECT next.id, $1, $2, $3, $4, 'o' || next.id FROM next`, sessionID, kind, channelID, content)
	if err != nil {
		return fmt.Errorf("queue %s: %w", kind, err)
	}
	return nil
}

// postParts queues a message that belongs to no turn, part by part, with
// nonces made from prefix.
func postParts(ctx context.Context, tx pgx.Tx, sessionID int64, channelID, prefix string, parts []string, replyTo, mention string) error {
	mark(tx, WakeOutbox)
	parts = cleanAll(parts)
	for i, p := range parts {
		if i > 0 {
			replyTo, mention = "", ""
		}
		if _, err := tx.Exec(ctx, `INSERT INTO outbox (session_id, kind, channel_id, content, part, nonce, reply_to, mention)
			VALUES ($1, 'report', $2, $3, $4, $5, nullif($6, ''), nullif($7, ''))`,
			sessionID, channelID, p, i, fmt.Sprintf("%sp%d", prefix, i), replyTo, mention); err != nil {
			return fmt.Errorf("post report: %w", err)
		}
	}
	return nil
}
