package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/callonbot/callon/master"
)

// SchemaVersion returns the latest migration applied to the database (0
// when none is) and the latest this binary knows, for callon doctor.
func (s *Store) SchemaVersion(ctx context.Context) (applied, known int, err error) {
	all, err := migrations()
	if err != nil {
		return 0, 0, fmt.Errorf("schema version: %w", err)
	}
	known = all[len(all)-1].version
	err = s.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&applied)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P01" { // undefined_table: never migrated
		return 0, known, nil
	}
	if err != nil {
		return 0, known, fmt.Errorf("schema version: %w", err)
	}
	return applied, known, nil
}

// TeamChannels returns, in id order, at most limit channels that teams
// use in Discord: those with roles of their own and those of active
// teams (a terminal's teams and guild-wide roles are not channels).
func (s *Store) TeamChannels(ctx context.Context, limit int) ([]master.RoleScope, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT guild_id, channel_id FROM (
			SELECT guild_id, channel_id FROM channel_roles WHERE channel_id <> ''
			UNION
			SELECT guild_id, channel_id FROM sessions WHERE state = 'active'
		) c
		WHERE guild_id ~ '^[0-9]+$' AND channel_id ~ '^[0-9]+$'
		ORDER BY length(guild_id), guild_id, length(channel_id), channel_id
		LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("team channels: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (master.RoleScope, error) {
		var c master.RoleScope
		return c, row.Scan(&c.GuildID, &c.ChannelID)
	})
	if err != nil {
		return nil, fmt.Errorf("team channels: %w", err)
	}
	return out, nil
}

// hintedError is an error that cannot connect, with what to do about it.
type hintedError struct {
	err  error
	hint string
}

func (e *hintedError) Error() string { return e.err.Error() + ": " + e.hint }
func (e *hintedError) Unwrap() error { return e.err }

// withHint adds to shown (the redacted form of cause) what to do about a
// connection Postgres refused: a database that does not exist, a user or
// password it does not accept, nothing answering at the address.
func withHint(shown, cause error, cc *pgconn.Config) error {
	var hint string
	var pgErr *pgconn.PgError
	var opErr *net.OpError
	switch {
	case errors.As(cause, &pgErr) && pgErr.Code == "3D000": // invalid_catalog_name
		hint = fmt.Sprintf("create it first: createdb %s (as a Postgres user who may create databases), or name another database in DATABASE_URL", cc.Database)
	case errors.As(cause, &pgErr) && (pgErr.Code == "28P01" || pgErr.Code == "28000"): // invalid_password, invalid_authorization_specification
		hint = fmt.Sprintf("Postgres does not accept the user %q or its password: put a user and password it knows in DATABASE_URL", cc.User)
	case errors.As(cause, &opErr) && errors.Is(cause, syscall.ECONNREFUSED):
		hint = fmt.Sprintf("nothing answers at %s:%d: is Postgres running there? (DATABASE_URL names the host and port)", cc.Host, cc.Port)
	default:
		return shown
	}
	return &hintedError{err: shown, hint: hint}
}

// DatabaseName is the name of the database the store is connected to.
func (s *Store) DatabaseName(ctx context.Context) (string, error) {
	var name string
	if err := s.pool.QueryRow(ctx, `SELECT current_database()`).Scan(&name); err != nil {
		return "", fmt.Errorf("database name: %w", err)
	}
	return name, nil
}
