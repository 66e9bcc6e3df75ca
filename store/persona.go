package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

var _ master.PersonaFallbacks = (*Store)(nil)

// personaColumn is the outbox's persona of each of n parts, as JSON (nil:
// callon's own voice).
func personaColumn(personas []*master.Persona, n int) ([][]byte, error) {
	out := make([][]byte, n)
	for i, p := range personas {
		if p == nil || i >= n {
			continue
		}
		clean := master.Persona{Name: cleanText(p.Name), Role: cleanText(p.Role), Avatar: cleanText(p.Avatar), Parent: p.Parent}
		b, err := json.Marshal(clean)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// scanPersona decodes an outbox row's persona; NULL is nil.
func scanPersona(raw []byte) (*master.Persona, error) {
	if raw == nil {
		return nil, nil
	}
	var p master.Persona
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// ChannelWebhook returns the webhook callon posts personas through in a
// channel: its id and token (a secret); master.ErrNotFound when it has
// none yet.
func (s *Store) ChannelWebhook(ctx context.Context, channelID string) (id, token string, err error) {
	err = s.pool.QueryRow(ctx, `SELECT webhook_id, token FROM channel_webhooks WHERE channel_id = $1`, channelID).Scan(&id, &token)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", master.ErrNotFound
	}
	if err != nil {
		return "", "", fmt.Errorf("channel webhook: %w", err)
	}
	return id, token, nil
}

// SaveChannelWebhook records a channel's webhook for personas, replacing
// the one it had.
func (s *Store) SaveChannelWebhook(ctx context.Context, guildID, channelID, id, token string) error {
	if _, err := s.pool.Exec(ctx, `INSERT INTO channel_webhooks (channel_id, guild_id, webhook_id, token) VALUES ($1, $2, $3, $4)
		ON CONFLICT (channel_id) DO UPDATE SET guild_id = excluded.guild_id, webhook_id = excluded.webhook_id,
			token = excluded.token, created_at = now()`, channelID, guildID, id, token); err != nil {
		return fmt.Errorf("save channel webhook: %w", err)
	}
	return nil
}

// DropChannelWebhook forgets a channel's webhook if it is still id (one
// Discord says is gone).
func (s *Store) DropChannelWebhook(ctx context.Context, channelID, id string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM channel_webhooks WHERE channel_id = $1 AND webhook_id = $2`, channelID, id); err != nil {
		return fmt.Errorf("drop channel webhook: %w", err)
	}
	return nil
}

// PersonaFallback records that a session's members could not post in
// their own names and, the first time, queues notice in its thread and
// wakes the outbox, in one statement; it reports whether this was the
// first time.
func (s *Store) PersonaFallback(ctx context.Context, sessionID int64, notice string) (bool, error) {
	var first bool
	payload := payloadOf(WakeOutbox, strconv.FormatInt(sessionID, 10))
	err := s.queryMaybeNotifying(ctx, payload, func(q querier) (bool, error) {
		err := q.QueryRow(ctx, `
			WITH marked AS (
				UPDATE sessions SET persona_notice_at = now() WHERE id = $1 AND persona_notice_at IS NULL
				RETURNING id, thread_id
			), next AS (SELECT nextval(pg_get_serial_sequence('outbox', 'id')) AS id FROM marked
			), queued AS (
				INSERT INTO outbox (id, session_id, kind, channel_id, content, nonce)
				OVERRIDING SYSTEM VALUE
				SELECT next.id, marked.id, 'notice', marked.thread_id, $2, 'o' || next.id FROM marked, next
				RETURNING id
			), woken AS (SELECT pg_notify($3, $4) FROM queued)
			SELECT EXISTS (SELECT 1 FROM queued), (SELECT count(*) FROM woken)`,
			sessionID, cleanText(notice), WakeChannel, payload).Scan(&first, new(int64))
		return first, err
	})
	if err != nil {
		return false, fmt.Errorf("persona fallback: %w", err)
	}
	return first, nil
}
