package store

import (
	"context"

	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// SleepIdle puts to sleep up to limit awake active teams idle since
// before cutoff: no turn queued or running (a question waiting for its
// answer does not keep a team awake), none changed since cutoff, and
// neither started nor woken since. It returns their ids. Teams being
// changed right now are skipped (SKIP LOCKED): the next sweep sees them.
func (s *Store) SleepIdle(ctx context.Context, cutoff time.Time, limit int) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `
		WITH idle AS (
			SELECT s.id FROM sessions s
			WHERE s.state = 'active' AND s.dormant_since IS NULL
			  AND s.created_at < $1 AND (s.woken_at IS NULL OR s.woken_at < $1)
			  AND NOT EXISTS (SELECT 1 FROM turns u WHERE u.session_id = s.id
			                  AND (u.state IN ('queued', 'running') OR u.updated_at >= $1))
			ORDER BY s.id
			LIMIT $2
			FOR UPDATE OF s SKIP LOCKED
		)
		UPDATE sessions s SET dormant_since = now() FROM idle WHERE s.id = idle.id
		RETURNING s.id`, cutoff, limit)
	if err != nil {
		return nil, fmt.Errorf("sleep idle teams: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("sleep idle teams: %w", err)
	}
	return ids, nil
}

// SleepSession puts a thread's team to sleep when it is awake and has no
// turn queued or running (Discord archived its thread); it reports
// whether it did.
func (s *Store) SleepSession(ctx context.Context, threadID string) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE sessions s SET dormant_since = now()
		WHERE s.thread_id = $1 AND s.state = 'active' AND s.dormant_since IS NULL
		  AND NOT EXISTS (SELECT 1 FROM turns u WHERE u.session_id = s.id AND u.state IN ('queued', 'running'))`, threadID)
	if err != nil {
		return false, fmt.Errorf("sleep session: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// WakeSession wakes a dormant team, if caps let its owner and its guild
// have one more awake team: a *master.CapError otherwise (counted under
// the guild's lock, as StartSession counts). It reports whether the team
// was asleep; waking an awake team changes nothing.
func (s *Store) WakeSession(ctx context.Context, sessionID int64, caps master.SessionCaps) (bool, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("wake session: %w", err)
	}
	defer tx.Rollback(ctx)
	sess, err := session(ctx, tx, sessionID)
	if err != nil {
		return false, err
	}
	if sess.DormantSince.IsZero() || sess.State != master.SessionActive {
		return false, nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('sessions/' || $1, 0))`, sess.GuildID); err != nil {
		return false, fmt.Errorf("wake session: lock guild: %w", err)
	}
	if err := checkCaps(ctx, tx, sess.GuildID, sess.OwnerID, caps); err != nil {
		return false, err
	}
	tag, err := tx.Exec(ctx, `UPDATE sessions SET dormant_since = NULL, woken_at = now()
		WHERE id = $1 AND state = 'active' AND dormant_since IS NOT NULL`, sessionID)
	if err != nil {
		return false, fmt.Errorf("wake session: %w", err)
	}
	return tag.RowsAffected() == 1, tx.Commit(ctx)
}

// DormantPoints lists the dormant Discord teams with where their
// thread's catch-up would start: Last is the latest message of the
// thread callon knows of (a turn's, or one it posted), so that a thread
// whose latest message is newer than that is the only one read.
func (s *Store) DormantPoints(ctx context.Context) ([]master.CatchUpPoint, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT s.id, s.guild_id, s.channel_id, s.thread_id, s.created_at,
		       coalesce(greatest(
		           (SELECT max(u.sort_key)::numeric FROM turns u WHERE u.session_id = s.id AND u.message_id ~ '^[0-9]+$'),
		           (SELECT max(o.discord_message_id::numeric) FROM outbox o
		            WHERE o.session_id = s.id AND o.channel_id = s.thread_id AND o.discord_message_id ~ '^[0-9]{1,20}$'))::text, '')
		FROM sessions s
		WHERE s.state = 'active' AND s.surface = 'discord' AND s.dormant_since IS NOT NULL
		ORDER BY s.id`)
	if err != nil {
		return nil, fmt.Errorf("dormant points: %w", err)
	}
	points, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.CatchUpPoint, error) {
		var p master.CatchUpPoint
		err := r.Scan(&p.SessionID, &p.GuildID, &p.ChannelID, &p.ThreadID, &p.Started, &p.Last)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("dormant points: %w", err)
	}
	return points, nil
}
