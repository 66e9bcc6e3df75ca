package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// attachmentColumns is the select list scanAttachment reads, without the
// file's content; withData adds it.
const attachmentColumns = `a.id, a.session_id, a.turn_id, a.position, a.discord_id, a.name, a.content_type,
	a.size, a.url, a.kind, a.state, a.note, a.attempts`

func scanAttachment(row pgx.Row, extra ...any) (master.Attachment, error) {
	var a master.Attachment
	err := row.Scan(append([]any{&a.ID, &a.SessionID, &a.TurnID, &a.Position, &a.FileID, &a.Name, &a.ContentType,
		&a.Size, &a.URL, &a.Kind, &a.State, &a.Note, &a.Attempts}, extra...)...)
	return a, err
}

// collectAttachments reads rows of attachmentColumns followed by the
// file's content.
func collectAttachments(rows pgx.Rows) ([]master.Attachment, error) {
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Attachment, error) {
		var data []byte
		a, err := scanAttachment(r, &data)
		a.Data = data
		return a, err
	})
}

// insertAttachments records a new turn's files, within its transaction.
func insertAttachments(ctx context.Context, tx pgx.Tx, turn master.Turn, atts []master.Attachment) error {
	if len(atts) == 0 {
		return nil
	}
	if slices.ContainsFunc(atts, func(a master.Attachment) bool { return a.State != master.AttachmentSkipped }) {
		mark(tx, WakeFiles)
	}
	n := len(atts)
	pos, discord, names, types, sizes, urls, kinds, states, notes :=
		make([]int32, n), make([]string, n), make([]string, n), make([]string, n), make([]int64, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, a := range atts {
		state := a.State
		if state != master.AttachmentSkipped {
			state = master.AttachmentPending // only the fetcher stores or fails a file
		}
		pos[i], discord[i], names[i], types[i], sizes[i] = int32(a.Position), a.FileID, cleanText(a.Name), cleanText(a.ContentType), max(a.Size, 0)
		urls[i], kinds[i], states[i], notes[i] = a.URL, string(a.Kind), string(state), cleanText(a.Note)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO attachments (session_id, turn_id, position, discord_id, name, content_type, size, url, kind, state, note)
		SELECT $1, $2, f.position, f.discord_id, f.name, f.content_type, f.size, f.url, f.kind, f.state, f.note
		FROM unnest($3::int[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[])
			AS f(position, discord_id, name, content_type, size, url, kind, state, note)`,
		turn.SessionID, turn.ID, pos, discord, names, types, sizes, urls, kinds, states, notes); err != nil {
		return fmt.Errorf("attachments: %w", err)
	}
	return nil
}

// TurnAttachments returns a turn's files in message order, with the
// content of those stored.
func (s *Store) TurnAttachments(ctx context.Context, turnID int64) ([]master.Attachment, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+attachmentColumns+`, a.data FROM attachments a
		WHERE a.turn_id = $1 ORDER BY a.position`, turnID)
	if err != nil {
		return nil, fmt.Errorf("turn attachments: %w", err)
	}
	atts, err := collectAttachments(rows)
	if err != nil {
		return nil, fmt.Errorf("turn attachments: %w", err)
	}
	return atts, nil
}

// ClaimAttachments leases up to n pending files of scope's sessions to
// owner for lease, oldest first, counting an attempt on each: files of
// turns still to be answered, not claimed by a live lease, whose retry
// time has come. Claimers skip each other's rows.
func (s *Store) ClaimAttachments(ctx context.Context, scope master.Scope, owner string, n int, lease time.Duration) ([]master.Attachment, error) {
	rows, err := s.pool.Query(ctx, `
		WITH picked AS (
			SELECT a.id FROM attachments a
			JOIN turns u ON u.id = a.turn_id
			WHERE a.state = 'pending' AND u.state IN ('queued', 'running')
			  AND EXISTS (SELECT 1 FROM sessions s WHERE s.id = u.session_id AND s.surface = $4 AND ($5 = '' OR s.attached_to = $5))
			  AND (a.lease_until IS NULL OR a.lease_until < now())
			  AND (a.not_before IS NULL OR a.not_before <= now())
			ORDER BY a.id
			LIMIT $2
			FOR UPDATE OF a SKIP LOCKED
		)
		UPDATE attachments a SET lease_owner = $1, lease_until = now() + $3 * interval '1 microsecond',
		       attempts = a.attempts + 1, updated_at = now()
		FROM picked WHERE a.id = picked.id
		RETURNING `+attachmentColumns, owner, n, lease.Microseconds(), scope.Of(), scope.Attached)
	if err != nil {
		return nil, fmt.Errorf("claim attachments: %w", err)
	}
	atts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Attachment, error) { return scanAttachment(r) })
	if err != nil {
		return nil, fmt.Errorf("claim attachments: %w", err)
	}
	return atts, nil
}

// SaveAttachment records what a file owner claimed came to: stored with
// its content, skipped or failed with a note, or pending again (after
// r.RetryIn; with r.Release, at once and with the attempt given back).
// master.ErrStale when owner no longer holds it. A resolved file wakes
// its session's master, in the same transaction.
func (s *Store) SaveAttachment(ctx context.Context, owner string, id int64, r master.AttachmentResult) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("save attachment: %w", err)
	}
	defer tx.Rollback(ctx)
	var sessionID int64
	if r.State == master.AttachmentPending {
		err = tx.QueryRow(ctx, `
			UPDATE attachments SET lease_owner = NULL, lease_until = NULL,
			       not_before = now() + $3 * interval '1 microsecond',
			       attempts = CASE WHEN $4 THEN greatest(attempts - 1, 0) ELSE attempts END, updated_at = now()
			WHERE id = $1 AND state = 'pending' AND lease_owner = $2
			RETURNING session_id`, id, owner, r.RetryIn.Microseconds(), r.Release).Scan(&sessionID)
	} else {
		var data []byte
		if r.State == master.AttachmentStored {
			data = r.Data
		}
		err = tx.QueryRow(ctx, `
			UPDATE attachments SET state = $3, data = $4, size = CASE WHEN $3 = 'stored' THEN $5 ELSE size END,
			       content_type = CASE WHEN $6 = '' THEN content_type ELSE $6 END, note = $7,
			       lease_owner = NULL, lease_until = NULL, updated_at = now()
			WHERE id = $1 AND state = 'pending' AND lease_owner = $2
			RETURNING session_id`,
			id, owner, r.State, data, r.Size, cleanText(r.ContentType), cleanText(r.Note)).Scan(&sessionID)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("save attachment %d: %w", id, master.ErrStale)
	}
	if err != nil {
		return fmt.Errorf("save attachment: %w", err)
	}
	if r.State != master.AttachmentPending {
		// Every resolved file wakes the session: the master looks, and
		// goes on once none of the turn's files is pending. (Waking only
		// on the last one would race with a concurrent save.)
		if err := notify(ctx, tx, WakeMaster, sessionID); err != nil {
			return fmt.Errorf("save attachment: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("save attachment: %w", err)
	}
	return nil
}
