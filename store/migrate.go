package store

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// migrationFiles holds the schema, one numbered file per migration:
// migrations/0001_init.sql, 0002_….sql. A migration runs inside the
// migrating transaction, so it must not use statements that refuse one
// (CREATE INDEX CONCURRENTLY, ALTER TYPE … ADD VALUE before PG 12).
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationLockKey is the pg_advisory_xact_lock key that serialises
// migrators: "callon" in ASCII.
const migrationLockKey int64 = 0x63616c6c6f6e

// migration is one numbered schema change.
type migration struct {
	version int
	name    string // file name without extension, e.g. "0001_init"
	sql     string
}

// Migrate applies every pending migration in one transaction and returns
// how many it applied. Concurrent migrators are safe: they queue on an
// advisory lock, and the later ones find nothing left to do. It refuses a
// database whose schema is newer than this binary.
func (s *Store) Migrate(ctx context.Context) (applied int, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	n, err := migrate(ctx, conn.Conn())
	if err != nil {
		return 0, err
	}
	if n > 0 {
		s.logger.Info("migrated schema", "applied", n)
	}
	return n, nil
}

// Migrate connects to databaseURL, applies every pending migration as
// (*Store).Migrate does, and disconnects. Errors never contain the
// password from databaseURL.
func Migrate(ctx context.Context, databaseURL string) (applied int, err error) {
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return 0, errors.New("migrate: cannot parse the database URL (not shown: it may hold a password)")
	}
	secrets := secretsOf(databaseURL, &cfg.Config)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return 0, redact(fmt.Errorf("migrate: %w", err), secrets)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	n, err := migrate(ctx, conn)
	if err != nil {
		return 0, redact(err, secrets)
	}
	return n, nil
}

// migrate applies the pending migrations on conn.
func migrate(ctx context.Context, conn *pgx.Conn) (int, error) {
	all, err := migrations()
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback(ctx)

	// Taken before anything is read: a migrator that waited here sees,
	// with its next statement's snapshot, everything the winner committed.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey); err != nil {
		return 0, fmt.Errorf("migrate: lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
		return 0, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	done, err := appliedVersions(ctx, tx)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	latest := all[len(all)-1].version
	if len(done) > 0 && done[len(done)-1] > latest {
		return 0, fmt.Errorf("migrate: database schema is at version %d, newer than this binary knows (%d): run a newer callon",
			done[len(done)-1], latest)
	}
	have := make(map[int]bool, len(done))
	for _, v := range done {
		have[v] = true
	}
	applied := 0
	for _, m := range all {
		if have[m.version] {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return 0, fmt.Errorf("migrate: apply %s: %w", m.name, err)
		}
		if _, err := tx.Exec(ctx,
			`INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			return 0, fmt.Errorf("migrate: record %s: %w", m.name, err)
		}
		applied++
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("migrate: commit: %w", err)
	}
	return applied, nil
}

// appliedVersions returns the recorded migration versions, ascending.
func appliedVersions(ctx context.Context, tx pgx.Tx) ([]int, error) {
	rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int])
}

// migrations returns the embedded migrations in version order. Versions
// must run 1, 2, 3… without gaps or repeats.
func migrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, p := range names {
		name := strings.TrimSuffix(path.Base(p), ".sql")
		num, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNNN_description.sql", p)
		}
		b, err := migrationFiles.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: name, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %s: want version %d (versions run 1, 2, 3… without gaps)", m.name, i+1)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no migrations embedded")
	}
	return out, nil
}
