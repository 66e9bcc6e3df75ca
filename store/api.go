package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// ClaimAPIKey claims an idempotency key for lease, for the request that
// starts its team. It returns the team started with the key before, if
// any (claimed false); else claims the key, unless another request holds
// it: master.ErrInProgress.
func (s *Store) ClaimAPIKey(ctx context.Context, key string, lease time.Duration) (sess master.Session, claimed bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return master.Session{}, false, fmt.Errorf("claim api key: %w", err)
	}
	defer tx.Rollback(ctx)
	sess, err = scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions s WHERE s.api_key = $1`, key))
	if err == nil {
		return sess, false, nil
	}
	if !errors.Is(err, master.ErrNotFound) {
		return master.Session{}, false, fmt.Errorf("claim api key: %w", err)
	}
	var got string
	err = tx.QueryRow(ctx, `
		INSERT INTO api_claims AS c (key, lease_until) VALUES ($1, now() + $2::interval)
		ON CONFLICT (key) DO UPDATE SET lease_until = excluded.lease_until WHERE c.lease_until < now()
		RETURNING key`, key, lease).Scan(&got)
	if errors.Is(err, pgx.ErrNoRows) {
		return master.Session{}, false, master.ErrInProgress
	}
	if err != nil {
		return master.Session{}, false, fmt.Errorf("claim api key: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return master.Session{}, false, fmt.Errorf("claim api key: %w", err)
	}
	return master.Session{}, true, nil
}

// ReleaseAPIKey lets go of a claimed key: its team started (the session
// holds the key from now on) or the request failed (the key may be used
// again).
func (s *Store) ReleaseAPIKey(ctx context.Context, key string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM api_claims WHERE key = $1`, key); err != nil {
		return fmt.Errorf("release api key: %w", err)
	}
	return nil
}

// SessionByAPIKey returns the team started with an idempotency key, or
// master.ErrNotFound.
func (s *Store) SessionByAPIKey(ctx context.Context, key string) (master.Session, error) {
	sess, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions s WHERE s.api_key = $1`, key))
	if err != nil && !errors.Is(err, master.ErrNotFound) {
		return sess, fmt.Errorf("session by api key: %w", err)
	}
	return sess, err
}

// seenPurge bounds how many expired request ids one call deletes.
const seenPurge = 100

// SeenRequest records a signed request's id until expires, and reports
// whether it was recorded (and not expired) already: a replay. Expired
// ids are deleted as it goes, a bounded number at a time.
func (s *Store) SeenRequest(ctx context.Context, id string, expires time.Time) (seen bool, err error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("seen request: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `DELETE FROM api_seen WHERE id IN (
		SELECT id FROM api_seen WHERE expires_at < now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)`, seenPurge); err != nil {
		return false, fmt.Errorf("seen request: %w", err)
	}
	tag, err := tx.Exec(ctx, `
		INSERT INTO api_seen AS a (id, expires_at) VALUES ($1, $2)
		ON CONFLICT (id) DO UPDATE SET expires_at = excluded.expires_at WHERE a.expires_at < now()`, id, expires)
	if err != nil {
		return false, fmt.Errorf("seen request: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("seen request: %w", err)
	}
	return tag.RowsAffected() == 0, nil
}

// SessionView returns what GET /v1/sessions/{id} shows of a session:
// the session, its turns by state, and its last report.
func (s *Store) SessionView(ctx context.Context, id int64) (master.SessionView, error) {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if err != nil {
		return master.SessionView{}, fmt.Errorf("session view: %w", err)
	}
	defer tx.Rollback(ctx)
	var v master.SessionView
	if v.Session, err = session(ctx, tx, id); err != nil {
		return v, err
	}
	if err := tx.QueryRow(ctx, `SELECT
		count(*) FILTER (WHERE state IN ('queued', 'running', 'waiting')),
		count(*) FILTER (WHERE state = 'done')
		FROM turns WHERE session_id = $1`, id).Scan(&v.OpenTurns, &v.DoneTurns); err != nil {
		return v, fmt.Errorf("session view: %w", err)
	}
	var r master.ReportView
	err = tx.QueryRow(ctx, `SELECT id, summary, final, delivery, created_at FROM reports
		WHERE from_session = $1 ORDER BY id DESC LIMIT 1`, id).Scan(&r.ID, &r.Summary, &r.Final, &r.Delivery, &r.At)
	switch {
	case err == nil:
		v.LastReport = &r
	case !errors.Is(err, pgx.ErrNoRows):
		return v, fmt.Errorf("session view: %w", err)
	}
	return v, nil
}
