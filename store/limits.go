package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// utcToday is the UTC day, whatever the connection's time zone: a guild's
// daily budget resets at midnight UTC.
const utcToday = `(now() AT TIME ZONE 'UTC')::date`

// usageByModel reads a session's usage by model, most used first.
func usageByModel(ctx context.Context, q querier, sessionID int64) ([]master.Usage, error) {
	rows, err := q.Query(ctx, `SELECT model, prompt_tokens, completion_tokens FROM session_usage
		WHERE session_id = $1 ORDER BY prompt_tokens + completion_tokens DESC, model`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("usage by model: %w", err)
	}
	return collectUsage(rows)
}

func collectUsage(rows pgx.Rows) ([]master.Usage, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Usage, error) {
		var u master.Usage
		err := r.Scan(&u.Model, &u.PromptTokens, &u.CompletionTokens)
		return u, err
	})
	if err != nil {
		return nil, fmt.Errorf("usage by model: %w", err)
	}
	return out, nil
}

// GuildSpend reads what /budget shows of a guild: its usage of the UTC
// day by model, and the daily budget its admins set (nil: the default).
func (s *Store) GuildSpend(ctx context.Context, guildID string) (master.GuildSpend, error) {
	var g master.GuildSpend
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return g, fmt.Errorf("guild spend: %w", err)
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, `SELECT model, prompt_tokens, completion_tokens FROM guild_usage
		WHERE guild_id = $1 AND day = `+utcToday+` ORDER BY prompt_tokens + completion_tokens DESC, model`, guildID)
	if err != nil {
		return g, fmt.Errorf("guild spend: %w", err)
	}
	if g.Today, err = collectUsage(rows); err != nil {
		return g, err
	}
	err = tx.QueryRow(ctx, `SELECT daily_tokens FROM guild_limits WHERE guild_id = $1`, guildID).Scan(&g.DailyBudget)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return g, fmt.Errorf("guild spend: %w", err)
	}
	return g, tx.Commit(ctx)
}

// SessionSpend reads a session's usage by model and the token budget an
// admin set for it (nil: the default).
func (s *Store) SessionSpend(ctx context.Context, sessionID int64) (master.SessionSpend, error) {
	var sp master.SessionSpend
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return sp, fmt.Errorf("session spend: %w", err)
	}
	defer tx.Rollback(ctx)
	if sp, err = sessionSpend(ctx, tx, sessionID); err != nil {
		return sp, err
	}
	return sp, tx.Commit(ctx)
}

func sessionSpend(ctx context.Context, q querier, sessionID int64) (master.SessionSpend, error) {
	var sp master.SessionSpend
	err := q.QueryRow(ctx, `SELECT token_budget FROM sessions WHERE id = $1`, sessionID).Scan(&sp.Budget)
	if errors.Is(err, pgx.ErrNoRows) {
		return sp, fmt.Errorf("session spend: session %d: %w", sessionID, master.ErrNotFound)
	}
	if err != nil {
		return sp, fmt.Errorf("session spend: %w", err)
	}
	sp.ByModel, err = usageByModel(ctx, q, sessionID)
	return sp, err
}

// SetGuildBudget sets (nil: back to the default) a guild's daily token
// budget on behalf of user by, with an audit record, in one transaction.
func (s *Store) SetGuildBudget(ctx context.Context, guildID string, tokens *int64, by string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("set guild budget: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `
		INSERT INTO guild_limits (guild_id, daily_tokens, updated_by) VALUES ($1, $2, $3)
		ON CONFLICT (guild_id) DO UPDATE SET daily_tokens = excluded.daily_tokens,
			updated_by = excluded.updated_by, updated_at = now()`, guildID, tokens, by); err != nil {
		return fmt.Errorf("set guild budget: %w", err)
	}
	if err := auditLimit(ctx, tx, guildID, 0, "guild_budget", map[string]any{"daily_tokens": tokens}, by); err != nil {
		return fmt.Errorf("set guild budget: %w", err)
	}
	return tx.Commit(ctx)
}

// SetSessionBudget sets (nil: back to the default) an active session's
// token budget on behalf of user by, with an audit record, in one
// transaction; master.ErrNotFound when the session is not active. Raising
// it wakes the session, whose next message is then answered.
func (s *Store) SetSessionBudget(ctx context.Context, sessionID int64, tokens *int64, by string) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("set session budget: %w", err)
	}
	defer tx.Rollback(ctx)
	var guildID, threadID string
	err = tx.QueryRow(ctx, `UPDATE sessions SET token_budget = $2 WHERE id = $1 AND state = 'active'
		RETURNING guild_id, thread_id`, sessionID, tokens).Scan(&guildID, &threadID)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("set session budget: session %d: %w", sessionID, master.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("set session budget: %w", err)
	}
	if err := auditLimit(ctx, tx, guildID, sessionID, "team_budget", map[string]any{"tokens": tokens, "thread_id": threadID}, by); err != nil {
		return fmt.Errorf("set session budget: %w", err)
	}
	return tx.Commit(ctx)
}

// auditLimit appends a budget or access change to limit_changes.
func auditLimit(ctx context.Context, tx pgx.Tx, guildID string, sessionID int64, what string, detail map[string]any, by string) error {
	payload, err := marshalJSON(detail)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO limit_changes (guild_id, session_id, what, detail, changed_by)
		VALUES ($1, nullif($2, 0), $3, $4, $5)`, guildID, sessionID, what, payload, by); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// LimitChanges returns a guild's latest budget and access changes, newest
// first.
func (s *Store) LimitChanges(ctx context.Context, guildID string, limit int) ([]master.LimitChange, error) {
	rows, err := s.pool.Query(ctx, `SELECT what, detail, changed_by, changed_at FROM limit_changes
		WHERE guild_id = $1 ORDER BY id DESC LIMIT $2`, guildID, limit)
	if err != nil {
		return nil, fmt.Errorf("limit changes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.LimitChange, error) {
		var c master.LimitChange
		err := r.Scan(&c.What, &c.Detail, &c.By, &c.At)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("limit changes: %w", err)
	}
	return out, nil
}

// Access returns a guild's allow lists.
func (s *Store) Access(ctx context.Context, guildID string) (master.Access, error) {
	rows, err := s.pool.Query(ctx, `SELECT action, kind, target_id FROM access_rules
		WHERE guild_id = $1 ORDER BY action, kind, added_at, target_id`, guildID)
	if err != nil {
		return nil, fmt.Errorf("access: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.AccessRule, error) {
		var a master.AccessRule
		err := r.Scan(&a.Action, &a.Kind, &a.ID)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("access: %w", err)
	}
	return out, nil
}

// AllowAccess adds rules to a guild's allow lists on behalf of user by,
// with an audit record; rules it has already change nothing. It returns
// how many were new.
func (s *Store) AllowAccess(ctx context.Context, guildID string, rules []master.AccessRule, by string) (int, error) {
	return s.changeAccess(ctx, guildID, rules, by, "access_allow", `
		INSERT INTO access_rules (guild_id, action, kind, target_id, added_by) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT DO NOTHING`, true)
}

// RemoveAccess removes rules from a guild's allow lists on behalf of user
// by, with an audit record. It returns how many it removed.
func (s *Store) RemoveAccess(ctx context.Context, guildID string, rules []master.AccessRule, by string) (int, error) {
	return s.changeAccess(ctx, guildID, rules, by, "access_remove", `
		DELETE FROM access_rules WHERE guild_id = $1 AND action = $2 AND kind = $3 AND target_id = $4`, false)
}

// changeAccess runs sql for each rule, with the guild, the rule and, when
// withBy, the user, and audits the rules it changed.
func (s *Store) changeAccess(ctx context.Context, guildID string, rules []master.AccessRule, by, what, sql string, withBy bool) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	defer tx.Rollback(ctx)
	n := 0
	var changed []map[string]string
	for _, r := range rules {
		args := []any{guildID, r.Action, r.Kind, r.ID}
		if withBy {
			args = append(args, by)
		}
		tag, err := tx.Exec(ctx, sql, args...)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
		if tag.RowsAffected() > 0 {
			n++
			changed = append(changed, map[string]string{"action": string(r.Action), "kind": string(r.Kind), "id": r.ID})
		}
	}
	if n > 0 {
		if err := auditLimit(ctx, tx, guildID, 0, what, map[string]any{"rules": changed}, by); err != nil {
			return 0, fmt.Errorf("%s: %w", what, err)
		}
	}
	return n, tx.Commit(ctx)
}

// ClearAccess removes every rule of an action from a guild's allow lists
// on behalf of user by, with an audit record, and returns how many there
// were: everyone may then.
func (s *Store) ClearAccess(ctx context.Context, guildID string, action master.AccessAction, by string) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("clear access: %w", err)
	}
	defer tx.Rollback(ctx)
	tag, err := tx.Exec(ctx, `DELETE FROM access_rules WHERE guild_id = $1 AND action = $2`, guildID, action)
	if err != nil {
		return 0, fmt.Errorf("clear access: %w", err)
	}
	n := int(tag.RowsAffected())
	if n > 0 {
		if err := auditLimit(ctx, tx, guildID, 0, "access_clear", map[string]any{"action": action, "removed": n}, by); err != nil {
			return 0, fmt.Errorf("clear access: %w", err)
		}
	}
	return n, tx.Commit(ctx)
}
