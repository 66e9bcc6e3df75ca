package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// watchFor is how long a watch waits on one process's lock before it
// looks again at which process to watch (one that registered since may
// be the one it should watch now).
const watchFor = 30 * time.Second

// Watch keeps watch on another live process until ctx ends, so that its
// death is known at once rather than at the next sweep: on a connection
// of its own, it waits for that process's liveness lock, which Postgres
// frees the moment the process's connection closes, and then takes the
// dead process's work back (TakeOver) and wakes the sessions concerned.
// Each process watches the one registered after it (by lock key; the
// last one watches the first), so every process has a watcher; the
// sweep remains the backstop. It returns nil when ctx ends.
func (l *Liveness) Watch(ctx context.Context) error {
	cfg := l.store.pool.Config().ConnConfig
	cfg.RuntimeParams["application_name"] = "callon-watch"
	w := l.conn
	w.name = "liveness watch"
	w.connect = func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, cfg.Copy()) }
	w.run(ctx, l.watch)
	return nil
}

// watch waits on one process's lock after another until the connection
// fails or ctx ends.
func (l *Liveness) watch(ctx context.Context, conn *pgx.Conn, established func()) error {
	if _, err := conn.Exec(ctx, `SET lock_timeout = `+fmt.Sprint(watchFor.Milliseconds())); err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	established()
	for {
		var owner string
		var key int32
		err := conn.QueryRow(ctx, `
			SELECT p.owner, p.lock_key FROM processes p
			WHERE p.owner <> $1
			ORDER BY p.lock_key <= coalesce((SELECT lock_key FROM processes WHERE owner = $1), 0), p.lock_key
			LIMIT 1`, l.owner).Scan(&owner, &key)
		if errors.Is(err, pgx.ErrNoRows) {
			// Alone: look again a little later.
			t := time.NewTimer(watchFor)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
		_, err = conn.Exec(ctx, `SELECT pg_advisory_lock($1, $2)`, processLockClass, key)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55P03" { // lock_not_available: lock_timeout
			continue
		}
		if err != nil {
			return fmt.Errorf("watch %s: %w", owner, err)
		}
		// Free: the process is gone (or only lost its connection, which
		// TakeOver tells apart). Let go of its lock at once, so that a
		// process that is only reconnecting is not kept waiting.
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, processLockClass, key); err != nil {
			return fmt.Errorf("watch %s: %w", owner, err)
		}
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = l.store.TakeOver(tctx, owner)
		cancel()
		if err != nil && ctx.Err() == nil {
			l.logger.Warn("take over a dead process; the sweep will", "dead_owner", owner, "err", err)
		}
	}
}

// TakeOver takes back at once the work of the process named owner if it
// is dead (registered, its liveness lock free): its tasks are queued
// again (or failed at max_attempts), its master leases and outbox claims
// freed, the holds of its model calls settled at their worst case, its
// registration removed, and the sessions concerned woken (this
// process's listeners at commit). It reports whether it took over. A
// process that only lost its connection and locked again is left alone;
// one that was taken for dead while reconnecting loses its leases, which
// attempts and lease guards make harmless.
func (s *Store) TakeOver(ctx context.Context, owner string) (bool, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return false, fmt.Errorf("take over %s: %w", owner, err)
	}
	defer rollback(ctx, tx)
	var free bool
	err = tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1, lock_key) FROM processes WHERE owner = $2`,
		processLockClass, owner).Scan(&free)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // it stopped gracefully, or was taken over already
	}
	if err != nil {
		return false, fmt.Errorf("take over %s: %w", owner, err)
	}
	if !free {
		return false, nil // alive: locked again
	}
	if _, err := tx.Exec(ctx, `DELETE FROM processes WHERE owner = $1`, owner); err != nil {
		return false, fmt.Errorf("take over %s: %w", owner, err)
	}
	_, _, sessions, err := s.takeBack(ctx, tx, []string{owner})
	if err != nil {
		return false, fmt.Errorf("take over %s: %w", owner, err)
	}
	// The holds of its model calls in flight are settled at their worst
	// case (the calls may have been made and paid for).
	if _, err := settleLost(ctx, tx, []string{owner}); err != nil {
		return false, fmt.Errorf("take over %s: %w", owner, err)
	}
	if err := notify(ctx, tx, WakeEvery, sessions...); err != nil {
		return false, fmt.Errorf("take over %s: %w", owner, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("take over %s: %w", owner, err)
	}
	return true, nil
}
