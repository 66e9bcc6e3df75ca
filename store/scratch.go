package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
)

// CreateScratchDatabase creates an empty database named prefix plus a
// random suffix on the server databaseURL reaches, and returns its URL and
// a function that drops it (closing whatever is still connected). It is
// for tools that need a database of their own for a while, such as
// `callon bench`; the user of databaseURL needs CREATEDB.
func CreateScratchDatabase(ctx context.Context, databaseURL, prefix string) (string, func(context.Context) error, error) {
	u, err := url.Parse(databaseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", nil, errors.New("create database: DATABASE_URL must be a postgres:// URL (not shown: it may hold a password)")
	}
	cfg, err := pgx.ParseConfig(databaseURL)
	if err != nil {
		return "", nil, errors.New("create database: cannot parse the database URL (not shown: it may hold a password)")
	}
	secrets := secretsOf(databaseURL, &cfg.Config)
	var b [6]byte
	rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	admin := func(ctx context.Context, stmt string) error {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return redact(err, secrets)
		}
		defer conn.Close(context.WithoutCancel(ctx))
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return redact(err, secrets)
		}
		return nil
	}
	if err := admin(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop := func(ctx context.Context) error {
		if err := admin(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
		return nil
	}
	u.Path = "/" + name
	return u.String(), drop, nil
}

// Analyze updates the planner's statistics of every table, as autovacuum
// does a while after a table has grown: a benchmark that fills tables
// then measures at once would otherwise be planned for empty ones.
func (s *Store) Analyze(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `ANALYZE`); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}
	return nil
}
