package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// retentionLockClass is the first key of the retention job's advisory
// lock, pg_advisory_lock(retentionLockClass, 0): "purg" in ASCII.
const retentionLockClass int32 = 0x70757267

// retentionSessions is how many sessions one round of the purge takes on.
const retentionSessions = 20

// retentionRounds bounds one purge; the next one carries on.
const retentionRounds = 500

// purgeable selects up to $2 sessions that ended before $1, none of whose
// linked sessions (the one that dispatched it, those it dispatched, those
// it reported to or that reported to it) is active or ended after $1: a
// session that is kept keeps what it links to intact. A session with a
// message or a webhook event still being delivered waits for it (their
// retries are bounded).
const purgeable = `
	SELECT s.id FROM sessions s
	WHERE s.state = 'dissolved' AND s.ended_at < $1
	  AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.session_id = s.id AND o.state = 'pending')
	  AND NOT EXISTS (SELECT 1 FROM webhook_events e WHERE e.session_id = s.id AND e.state = 'pending')
	  AND NOT EXISTS (
		SELECT 1 FROM sessions l
		WHERE (l.id = s.dispatched_by OR l.dispatched_by = s.id
		       OR l.id IN (SELECT r.to_session FROM reports r WHERE r.from_session = s.id)
		       OR l.id IN (SELECT r.from_session FROM reports r WHERE r.to_session = s.id))
		  AND NOT (l.state = 'dissolved' AND l.ended_at < $1))
	ORDER BY s.id LIMIT $2`

// PurgeEnded deletes the rows of sessions that ended before cutoff (their
// signals, webhook events, outbox messages, tasks, reports, turns, roster
// and usage, then the sessions), and guild usage of days before it. It
// works in small batches, each statement deleting at most batch rows in a
// transaction of its own, children before parents, so no statement holds
// locks for long; active sessions, and ended ones it keeps, are never
// touched (see purgeable). Only one process purges at a time: when
// another holds the retention lock, ran is false and nothing is done.
func (s *Store) PurgeEnded(ctx context.Context, cutoff time.Time, batch int) (p master.Purged, ran bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return p, false, fmt.Errorf("purge: %w", err)
	}
	defer conn.Release()
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, 0)`, retentionLockClass).Scan(&ran); err != nil || !ran {
		if err != nil {
			err = fmt.Errorf("purge: lock: %w", err)
		}
		return p, false, err
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, uerr := conn.Exec(uctx, `SELECT pg_advisory_unlock($1, 0)`, retentionLockClass); uerr != nil {
			// A pooled connection must not keep the lock: close it.
			_ = conn.Conn().Close(uctx)
		}
	}()
	for range retentionRounds {
		ids, err := s.purgeableSessions(ctx, cutoff)
		if err != nil || len(ids) == 0 {
			if err == nil {
				err = s.purgeGuildUsage(ctx, cutoff, batch, &p)
			}
			if err == nil {
				err = s.purgeNotes(ctx, cutoff, batch, &p)
			}
			return p, true, err
		}
		if err := s.purgeSessions(ctx, ids, batch, &p); err != nil {
			return p, true, err
		}
	}
	return p, true, nil
}

func (s *Store) purgeableSessions(ctx context.Context, cutoff time.Time) ([]int64, error) {
	rows, err := s.pool.Query(ctx, purgeable, cutoff, retentionSessions)
	if err != nil {
		return nil, fmt.Errorf("purge: find sessions: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("purge: find sessions: %w", err)
	}
	return ids, nil
}

// purgeSessions deletes ids' rows table by table, batch rows at a time.
func (s *Store) purgeSessions(ctx context.Context, ids []int64, batch int, p *master.Purged) error {
	steps := []struct {
		table string
		count *int
	}{
		{"signals", &p.Signals},
		{"webhook_events", &p.WebhookEvents},
		{"outbox", &p.Outbox},
		{"tasks", &p.Tasks},
		{"reports", &p.Reports},
		{"turns", &p.Turns},
	}
	for _, st := range steps {
		key := "session_id"
		if st.table == "reports" {
			key = "from_session"
		}
		for {
			tag, err := s.pool.Exec(ctx, `DELETE FROM `+st.table+` WHERE id IN (
				SELECT id FROM `+st.table+` WHERE `+key+` = ANY ($1) LIMIT $2)`, ids, batch)
			if err != nil {
				return fmt.Errorf("purge %s: %w", st.table, err)
			}
			*st.count += int(tag.RowsAffected())
			if tag.RowsAffected() < int64(batch) {
				break
			}
		}
	}
	// What is left of each session is small: its roster and usage go
	// with it (ON DELETE CASCADE).
	tag, err := s.pool.Exec(ctx, `DELETE FROM sessions WHERE id = ANY ($1) AND state = 'dissolved'`, ids)
	if err != nil {
		return fmt.Errorf("purge sessions: %w", err)
	}
	p.Sessions += int(tag.RowsAffected())
	return nil
}

// purgeGuildUsage deletes guilds' usage of the days before cutoff's: by
// model (guild_usage) and in all (guild_spend).
func (s *Store) purgeGuildUsage(ctx context.Context, cutoff time.Time, batch int, p *master.Purged) error {
	for _, table := range []string{"guild_usage", "guild_spend"} {
		for {
			tag, err := s.pool.Exec(ctx, `DELETE FROM `+table+` WHERE ctid IN (
				SELECT ctid FROM `+table+` WHERE day < ($1::timestamptz AT TIME ZONE 'UTC')::date LIMIT $2)`, cutoff, batch)
			if err != nil {
				return fmt.Errorf("purge guild usage: %w", err)
			}
			p.GuildUsage += int(tag.RowsAffected())
			if tag.RowsAffected() < int64(batch) {
				break
			}
		}
	}
	return nil
}
