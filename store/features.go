package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

var _ master.FeatureStore = (*Store)(nil)

// ConfiguredFeatures returns the features set by command for a channel
// and for its guild (channel ""), those that exist.
func (s *Store) ConfiguredFeatures(ctx context.Context, guildID, channelID string) ([]master.FeatureEntry, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT guild_id, channel_id, personas, memory, review, updated_by, updated_at
		FROM channel_features WHERE guild_id = $1 AND channel_id IN ($2, '')
		ORDER BY channel_id DESC`, guildID, channelID)
	if err != nil {
		return nil, fmt.Errorf("configured features: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (master.FeatureEntry, error) {
		var e master.FeatureEntry
		var review *string
		err := row.Scan(&e.Scope.GuildID, &e.Scope.ChannelID, &e.Settings.Personas, &e.Settings.Memory, &review, &e.UpdatedBy, &e.UpdatedAt)
		if review != nil {
			m := master.ReviewMode(*review)
			e.Settings.Review = &m
		}
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("configured features: %w", err)
	}
	return out, nil
}

// SetFeatures changes what a scope says about its features and records
// the change in role_changes, in one transaction: a field of set that is
// nil stays as it was, a feature named in clear goes back to NULL (the
// next source decides). A scope left saying nothing loses its row.
func (s *Store) SetFeatures(ctx context.Context, scope master.RoleScope, set master.FeatureSettings, clear []string, by string) error {
	var review *string
	if set.Review != nil {
		v := string(*set.Review)
		review = &v
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("set features: %w", err)
	}
	defer tx.Rollback(ctx)
	has := func(name string) bool { return slices.Contains(clear, name) }
	if _, err := tx.Exec(ctx, `
		INSERT INTO channel_features AS f (guild_id, channel_id, personas, memory, review, updated_by)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (guild_id, channel_id) DO UPDATE SET
			personas = CASE WHEN $7 THEN NULL ELSE coalesce(excluded.personas, f.personas) END,
			memory = CASE WHEN $8 THEN NULL ELSE coalesce(excluded.memory, f.memory) END,
			review = CASE WHEN $9 THEN NULL ELSE coalesce(excluded.review, f.review) END,
			updated_by = excluded.updated_by, updated_at = now()`,
		scope.GuildID, scope.ChannelID, set.Personas, set.Memory, review, by,
		has(master.FeaturePersonas), has(master.FeatureMemory), has(master.FeatureReview)); err != nil {
		return fmt.Errorf("set features: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM channel_features WHERE guild_id = $1 AND channel_id = $2
		AND personas IS NULL AND memory IS NULL AND review IS NULL`, scope.GuildID, scope.ChannelID); err != nil {
		return fmt.Errorf("set features: %w", err)
	}
	var names []string
	detail := map[string]any{}
	for _, f := range []struct {
		name string
		val  any
		set  bool
	}{
		{master.FeaturePersonas, set.Personas, set.Personas != nil},
		{master.FeatureMemory, set.Memory, set.Memory != nil},
		{master.FeatureReview, review, review != nil},
	} {
		switch {
		case has(f.name):
			names, detail[f.name] = append(names, f.name), "inherit"
		case f.set:
			names, detail[f.name] = append(names, f.name), f.val
		}
	}
	if err := recordRoleChange(ctx, tx, scope, master.RoleFeatures, names, detail, by); err != nil {
		return fmt.Errorf("set features: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("set features: %w", err)
	}
	return nil
}
