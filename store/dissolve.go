package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// Dissolve ends an active session in one transaction: its queued and
// running tasks and its open turns are cancelled, the session is marked
// dissolved, and summary is queued for its thread, after the reports
// that reached it and were never taken up, each cut into messages by
// split (nil: one message each). master.ErrNotFound when it is not
// active.
func (s *Store) Dissolve(ctx context.Context, sessionID int64, summary string, final *master.NewReport, split func(string) []string) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	defer tx.Rollback(ctx)
	var threadID string
	err = tx.QueryRow(ctx, `UPDATE sessions SET state = 'dissolved', ended_at = now(),
		master_owner = NULL, master_lease_until = NULL
		WHERE id = $1 AND state = 'active' RETURNING thread_id`, sessionID).Scan(&threadID)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("dissolve session %d: %w", sessionID, master.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	wake := []int64{sessionID}
	cancelled, err := cancelSessionTasks(ctx, tx, sessionID, "the team was dissolved")
	if err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	// Reports that reached this team but were never taken up are posted
	// in its thread as they are: nothing addressed to it is lost.
	rows, err := tx.Query(ctx, `SELECT content FROM turns WHERE session_id = $1 AND state = 'queued'
		AND report_id IS NOT NULL ORDER BY id`, sessionID)
	if err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	pending, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	var finalReport int64
	for _, content := range pending {
		parts := []string{content}
		if split != nil {
			parts = split(content)
		}
		for _, part := range parts {
			if err := queueNotice(ctx, tx, sessionID, master.OutReport, threadID, part); err != nil {
				return fmt.Errorf("dissolve: %w", err)
			}
		}
	}
	if final != nil {
		from, err := scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions s WHERE s.id = $1`, sessionID))
		if err != nil {
			return fmt.Errorf("dissolve: %w", err)
		}
		rep, err := s.deliverReport(ctx, tx, from, 0, *final)
		if err != nil {
			return fmt.Errorf("dissolve: final report: %w", err)
		}
		wake = append(wake, rep.ToSession)
		finalReport = rep.ID
	}
	if _, err := tx.Exec(ctx, `UPDATE turns SET state = 'cancelled', updated_at = now()
		WHERE session_id = $1 AND state IN ('queued', 'running', 'waiting')`, sessionID); err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	// A reply or question decided but not posted yet is not posted: the
	// team is gone. (One a sender is posting right now may still land.)
	if _, err := tx.Exec(ctx, `UPDATE outbox SET state = 'cancelled', lease_until = NULL, lease_owner = NULL,
		error = 'the team was dissolved'
		WHERE session_id = $1 AND state = 'pending' AND kind IN ('reply', 'question', 'approval')`, sessionID); err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	if err := queueNotice(ctx, tx, sessionID, master.OutSummary, threadID, summary); err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	if err := s.enqueueWebhook(ctx, tx, sessionID, master.WebhookSessionDissolved, master.DissolvedData(summary, cancelled, finalReport)); err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	if err := notify(ctx, tx, WakeEvery, wake...); err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("dissolve: %w", err)
	}
	return nil
}
