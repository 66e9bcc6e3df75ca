package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// ConfiguredRoles returns the roles set by command for a channel and for
// its whole guild (Scope.ChannelID ""), each scope in the order its roles
// were first set.
func (s *Store) ConfiguredRoles(ctx context.Context, guildID, channelID string) ([]master.RoleEntry, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT guild_id, channel_id, name, description, prompt, model, temperature, max_tokens, timeout_ms,
			tools, updated_by, updated_at
		FROM channel_roles WHERE guild_id = $1 AND channel_id IN ($2, '')
		ORDER BY channel_id, id`, guildID, channelID)
	if err != nil {
		return nil, fmt.Errorf("configured roles: %w", err)
	}
	entries, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (master.RoleEntry, error) {
		var e master.RoleEntry
		var maxTokens, timeout *int32
		err := row.Scan(&e.Scope.GuildID, &e.Scope.ChannelID, &e.Name, &e.Description, &e.Prompt, &e.Model,
			&e.Temperature, &maxTokens, &timeout, &e.Tools, &e.UpdatedBy, &e.UpdatedAt)
		e.MaxTokens, e.Timeout = fromLimits(maxTokens, timeout)
		if len(e.Tools) == 0 {
			e.Tools = nil
		}
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("configured roles: %w", err)
	}
	return entries, nil
}

// SetRole creates or replaces a role of a scope and records the change,
// in one transaction. master.ErrRosterFull when the role is new and the
// scope already holds max roles (max 0: no bound).
func (s *Store) SetRole(ctx context.Context, scope master.RoleScope, r master.Role, by string, max int) (bool, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("set role: %w", err)
	}
	defer tx.Rollback(ctx)
	// Two admins adding roles at once must not overshoot the cap: the
	// count below is only true while no one else writes the scope.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('channel_roles/' || $1 || '/' || $2, 0))`,
		scope.GuildID, scope.ChannelID); err != nil {
		return false, fmt.Errorf("set role: lock scope: %w", err)
	}
	var count int
	var exists bool
	if err := tx.QueryRow(ctx, `
		SELECT count(*), coalesce(bool_or(name = $3), false)
		FROM channel_roles WHERE guild_id = $1 AND channel_id = $2`,
		scope.GuildID, scope.ChannelID, r.Name).Scan(&count, &exists); err != nil {
		return false, fmt.Errorf("set role: %w", err)
	}
	if !exists && max > 0 && count >= max {
		return false, master.ErrRosterFull
	}
	maxTokens, timeout := toLimits(r)
	var created bool
	if err := tx.QueryRow(ctx, `
		INSERT INTO channel_roles AS c (guild_id, channel_id, name, description, prompt, model, temperature,
			max_tokens, timeout_ms, tools, updated_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (guild_id, channel_id, name) DO UPDATE SET
			description = excluded.description, prompt = excluded.prompt, model = excluded.model,
			temperature = excluded.temperature, max_tokens = excluded.max_tokens, timeout_ms = excluded.timeout_ms,
			tools = excluded.tools, updated_by = excluded.updated_by, updated_at = now()
		RETURNING c.xmax = 0`,
		scope.GuildID, scope.ChannelID, r.Name, r.Description, r.Prompt, r.Model, r.Temperature,
		maxTokens, timeout, toolList(r.Tools), by).Scan(&created); err != nil {
		return false, fmt.Errorf("set role: %w", err)
	}
	if err := recordRoleChange(ctx, tx, scope, master.RoleSet, []string{r.Name}, definition(r), by); err != nil {
		return false, fmt.Errorf("set role: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("set role: %w", err)
	}
	return created, nil
}

// RemoveRole deletes a role of a scope and records the change, in one
// transaction; master.ErrNotFound when the scope has no such role.
func (s *Store) RemoveRole(ctx context.Context, scope master.RoleScope, name, by string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("remove role: %w", err)
	}
	defer tx.Rollback(ctx)
	removed, err := deleteRoles(ctx, tx, scope, name)
	if err != nil {
		return fmt.Errorf("remove role: %w", err)
	}
	if len(removed) == 0 {
		return master.ErrNotFound
	}
	if err := recordRoleChange(ctx, tx, scope, master.RoleRemove, []string{name}, definition(removed[0]), by); err != nil {
		return fmt.Errorf("remove role: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("remove role: %w", err)
	}
	return nil
}

// ResetRoles deletes every role of a scope and, if there was any, records
// the change, in one transaction. It returns the names removed.
func (s *Store) ResetRoles(ctx context.Context, scope master.RoleScope, by string) ([]string, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("reset roles: %w", err)
	}
	defer tx.Rollback(ctx)
	removed, err := deleteRoles(ctx, tx, scope, "")
	if err != nil {
		return nil, fmt.Errorf("reset roles: %w", err)
	}
	if len(removed) == 0 {
		return nil, nil
	}
	names := master.RoleNames(removed)
	defs := make(map[string]roleDefinition, len(removed))
	for _, r := range removed {
		defs[r.Name] = definition(r)
	}
	if err := recordRoleChange(ctx, tx, scope, master.RoleReset, names, map[string]any{"roles": defs}, by); err != nil {
		return nil, fmt.Errorf("reset roles: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("reset roles: %w", err)
	}
	return names, nil
}

// RoleChanges returns the latest changes to a channel's roles and to its
// guild's, newest first.
func (s *Store) RoleChanges(ctx context.Context, guildID, channelID string, limit int) ([]master.RoleChange, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT guild_id, channel_id, action, names, changed_by, changed_at
		FROM role_changes WHERE guild_id = $1 AND channel_id IN ($2, '')
		ORDER BY id DESC LIMIT $3`, guildID, channelID, limit)
	if err != nil {
		return nil, fmt.Errorf("role changes: %w", err)
	}
	changes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (master.RoleChange, error) {
		var c master.RoleChange
		err := row.Scan(&c.Scope.GuildID, &c.Scope.ChannelID, &c.Action, &c.Names, &c.By, &c.At)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("role changes: %w", err)
	}
	return changes, nil
}

// deleteRoles deletes the role called name of a scope, or all of them for
// name "", and returns what it deleted in the order they were set.
func deleteRoles(ctx context.Context, tx pgx.Tx, scope master.RoleScope, name string) ([]master.Role, error) {
	rows, err := tx.Query(ctx, `
		WITH d AS (
			DELETE FROM channel_roles WHERE guild_id = $1 AND channel_id = $2 AND ($3 = '' OR name = $3)
			RETURNING id, `+roleColumns+`
		)
		SELECT `+roleColumns+` FROM d ORDER BY id`,
		scope.GuildID, scope.ChannelID, name)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanRole)
}

func recordRoleChange(ctx context.Context, tx pgx.Tx, scope master.RoleScope, action master.RoleAction, names []string, detail any, by string) error {
	b, err := marshalJSON(detail)
	if err != nil {
		return fmt.Errorf("record change: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO role_changes (guild_id, channel_id, action, names, detail, changed_by)
		VALUES ($1, $2, $3, $4, $5, $6)`,
		scope.GuildID, scope.ChannelID, string(action), names, b, by); err != nil {
		return fmt.Errorf("record change: %w", err)
	}
	return nil
}

// roleDefinition is a role as the audit trail keeps it.
type roleDefinition struct {
	Description string   `json:"description"`
	Prompt      string   `json:"prompt"`
	Model       string   `json:"model,omitempty"`
	Temperature *float32 `json:"temperature,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	TimeoutMS   int64    `json:"timeout_ms,omitempty"`
	Tools       []string `json:"tools,omitempty"`
}

func definition(r master.Role) roleDefinition {
	return roleDefinition{Description: r.Description, Prompt: r.Prompt, Model: r.Model,
		Temperature: r.Temperature, MaxTokens: r.MaxTokens, TimeoutMS: r.Timeout.Milliseconds(), Tools: r.Tools}
}

// toolList is a role's tools as a column: never NULL.
func toolList(tools []string) []string {
	if tools == nil {
		return []string{}
	}
	return cleanAll(tools)
}

// toLimits is a role's optional limits as nullable columns.
func toLimits(r master.Role) (maxTokens, timeoutMS *int32) {
	if r.MaxTokens > 0 {
		v := int32(r.MaxTokens)
		maxTokens = &v
	}
	if r.Timeout > 0 {
		v := int32(r.Timeout / time.Millisecond)
		timeoutMS = &v
	}
	return maxTokens, timeoutMS
}

func fromLimits(maxTokens, timeoutMS *int32) (int, time.Duration) {
	var n int
	var d time.Duration
	if maxTokens != nil {
		n = int(*maxTokens)
	}
	if timeoutMS != nil {
		d = time.Duration(*timeoutMS) * time.Millisecond
	}
	return n, d
}
