package store

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// processLockClass is the first key of every process's advisory lock,
// pg_advisory_lock(processLockClass, lock_key): "call" in ASCII.
const processLockClass int32 = 0x63616c6c

// takeoverGrace is how long a process's lock must have been seen free
// before its leases are taken back: long enough for a holder that only
// lost its connection to lock again.
const takeoverGrace = 500 * time.Millisecond

// Liveness is this process's proof of life: a row in processes and an
// advisory lock on it, held on a connection of its own for the process's
// lifetime. When the process dies, Postgres closes the connection and
// frees the lock, and any process's sweep (SweepExpired) takes its leases
// back within seconds instead of waiting for them to expire.
type Liveness struct {
	store  *Store
	conn   dedicated
	owner  string
	logger *slog.Logger

	readyOnce sync.Once
	ready     chan struct{}

	ping time.Duration
}

// NewLiveness returns the liveness of the process named owner (the name
// its leases carry). Call Run.
func (s *Store) NewLiveness(owner string) *Liveness {
	cfg := s.pool.Config().ConnConfig
	cfg.RuntimeParams["application_name"] = "callon-liveness"
	logger := s.logger.With("component", "liveness", "owner", owner)
	return &Liveness{
		store: s,
		conn: dedicated{
			name: "liveness lock",
			connect: func(ctx context.Context) (*pgx.Conn, error) {
				return pgx.ConnectConfig(ctx, cfg.Copy())
			},
			logger:     logger,
			minBackoff: 100 * time.Millisecond,
			maxBackoff: 5 * time.Second,
		},
		owner:  owner,
		logger: logger,
		ready:  make(chan struct{}),
		ping:   5 * time.Second,
	}
}

// Ready is closed once the lock is held for the first time.
func (l *Liveness) Ready() <-chan struct{} { return l.ready }

// Run registers the process and holds its lock until ctx ends, locking
// again after a lost connection. When ctx ends it unlocks and removes the
// registration, so a process that stops gracefully is not taken for
// dead. It returns nil when ctx ends.
func (l *Liveness) Run(ctx context.Context) error {
	l.conn.run(ctx, l.hold)
	return nil
}

// hold registers, locks, and keeps the connection alive until it fails
// or ctx ends.
func (l *Liveness) hold(ctx context.Context, conn *pgx.Conn, established func()) error {
	defer func() {
		if ctx.Err() != nil {
			// A graceful stop: no one should take this process for dead.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if _, err := conn.Exec(cctx, `DELETE FROM processes WHERE owner = $1`, l.owner); err != nil {
				l.logger.Warn("unregister process", "err", err)
			}
		}
	}()
	var key int32
	if err := conn.QueryRow(ctx, `
		INSERT INTO processes (owner) VALUES ($1)
		ON CONFLICT (owner) DO UPDATE SET lost_at = NULL
		RETURNING lock_key`, l.owner).Scan(&key); err != nil {
		return fmt.Errorf("register: %w", err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, $2)`, processLockClass, key); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	// A sweeper may have found the lock free while it was being taken.
	if _, err := conn.Exec(ctx, `UPDATE processes SET lost_at = NULL WHERE owner = $1`, l.owner); err != nil {
		return fmt.Errorf("register: %w", err)
	}
	established()
	l.readyOnce.Do(func() { close(l.ready) })
	t := time.NewTicker(l.ping)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := conn.Ping(pctx)
			cancel()
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("ping: %w", err)
			}
		}
	}
}

// deadOwners finds the registered processes whose lock is free: it marks
// each the first time (lost_at), and returns those found free before,
// at least takeoverGrace ago. Their registrations are removed.
func deadOwners(ctx context.Context, tx pgx.Tx) ([]string, error) {
	rows, err := tx.Query(ctx, `
		WITH probe AS (
			SELECT owner, lost_at, pg_try_advisory_xact_lock($1, lock_key) AS free FROM processes
		), marked AS (
			UPDATE processes p SET lost_at = now()
			FROM probe WHERE p.owner = probe.owner AND probe.free AND p.lost_at IS NULL
		)
		SELECT owner FROM probe WHERE free AND lost_at < now() - $2::interval`, processLockClass, takeoverGrace)
	if err != nil {
		return nil, fmt.Errorf("dead owners: %w", err)
	}
	dead, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(dead) == 0 {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM processes WHERE owner = ANY ($1)`, dead); err != nil {
		return nil, fmt.Errorf("dead owners: %w", err)
	}
	return dead, nil
}

// takeOver frees the master leases and outbox claims of dead owners, and
// returns the sessions concerned, to wake. (Their tasks are swept with
// the expired ones.)
func takeOver(ctx context.Context, tx pgx.Tx, dead []string) ([]int64, error) {
	rows, err := tx.Query(ctx, `
		WITH masters AS (
			UPDATE sessions SET master_owner = NULL, master_lease_until = NULL
			WHERE master_owner = ANY ($1) RETURNING id
		), claims AS (
			UPDATE outbox SET lease_until = NULL, lease_owner = NULL
			WHERE state = 'pending' AND lease_owner = ANY ($1) RETURNING session_id
		)
		SELECT id FROM masters UNION SELECT session_id FROM claims WHERE session_id IS NOT NULL`, dead)
	if err != nil {
		return nil, fmt.Errorf("take over: %w", err)
	}
	sessions, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("take over: %w", err)
	}
	return sessions, nil
}
