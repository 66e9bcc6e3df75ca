package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// ResumeSession attaches to owner (a chat process, registered by its
// Liveness) the terminal team people talked to last that no other live
// chat shows, and returns it; master.ErrNotFound when there is none. A
// chat that ended, or died, leaves its team to the next one: a process
// whose liveness lock is free is not live.
func (s *Store) ResumeSession(ctx context.Context, owner string) (master.Session, error) {
	sess, err := scanSession(s.pool.QueryRow(ctx, `
		WITH pick AS (
			SELECT s.id FROM sessions s
			WHERE s.state = 'active' AND s.surface = 'terminal'
			  AND (s.attached_to IS NULL OR s.attached_to = $1 OR NOT EXISTS (
				SELECT 1 FROM processes p
				WHERE p.owner = s.attached_to AND NOT pg_try_advisory_xact_lock($2, p.lock_key)))
			ORDER BY greatest(s.created_at, (SELECT max(u.created_at) FROM turns u WHERE u.session_id = s.id)) DESC, s.id DESC
			LIMIT 1
			FOR UPDATE OF s SKIP LOCKED
		)
		UPDATE sessions s SET attached_to = $1 FROM pick WHERE s.id = pick.id
		RETURNING `+sessionColumns, owner, processLockClass))
	if err != nil && !errors.Is(err, master.ErrNotFound) {
		return sess, fmt.Errorf("resume session: %w", err)
	}
	return sess, err
}

// DetachSession leaves a terminal team that owner's chat showed to the
// next chat that resumes it.
func (s *Store) DetachSession(ctx context.Context, sessionID int64, owner string) error {
	if _, err := s.pool.Exec(ctx, `UPDATE sessions SET attached_to = NULL WHERE id = $1 AND attached_to = $2`, sessionID, owner); err != nil {
		return fmt.Errorf("detach session: %w", err)
	}
	return nil
}

// LastExchanges returns up to limit of a session's last finished turns,
// oldest first, each with the last answer the team posted for it: what
// a resumed chat shows first.
func (s *Store) LastExchanges(ctx context.Context, sessionID int64, limit int) ([]master.Exchange, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT u.id, u.author_id, u.author_bot, u.content,
		       coalesce((SELECT string_agg(o.content, E'\n' ORDER BY o.part) FROM outbox o
		                 WHERE o.turn_id = u.id AND o.kind = last.kind AND o.seq = last.seq), ''),
		       coalesce(last.kind = 'question', false)
		FROM (SELECT id, author_id, author_bot, content, sort_key FROM turns
		      WHERE session_id = $1 AND state IN ('done', 'waiting')
		      ORDER BY sort_key DESC, id DESC LIMIT $2) u
		LEFT JOIN LATERAL (
			SELECT o.kind, o.seq FROM outbox o
			WHERE o.turn_id = u.id AND o.kind IN ('reply', 'question')
			ORDER BY o.id DESC LIMIT 1
		) last ON true
		ORDER BY u.sort_key, u.id`, sessionID, limit)
	if err != nil {
		return nil, fmt.Errorf("last exchanges: %w", err)
	}
	return collectHistory(rows)
}

// PendingApprovals lists a session's requests still waiting for a
// decision, oldest first: a resumed chat shows them again.
func (s *Store) PendingApprovals(ctx context.Context, sessionID int64) ([]master.Approval, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+approvalColumns+` FROM `+approvalFrom+`
		WHERE a.session_id = $1 AND a.state = 'pending' ORDER BY a.id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("pending approvals: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Approval, error) { return scanApproval(r) })
	if err != nil {
		return nil, fmt.Errorf("pending approvals: %w", err)
	}
	return list, nil
}
