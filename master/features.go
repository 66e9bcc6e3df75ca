package master

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ReviewMode is when a team's reviewer checks a reply before it is
// posted.
type ReviewMode string

// Review modes.
const (
	ReviewOff ReviewMode = "off"
	// ReviewOn reviews replies that merge workers' results; a direct
	// answer (no task this turn) is posted as it is.
	ReviewOn ReviewMode = "on"
	// ReviewAlways reviews direct answers too.
	ReviewAlways ReviewMode = "always"
)

// ParseReviewMode reads off, on or always (and the YAML-ish false and
// true); ok is false for anything else.
func ParseReviewMode(s string) (ReviewMode, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "off", "false", "no":
		return ReviewOff, true
	case "on", "true", "yes":
		return ReviewOn, true
	case "always":
		return ReviewAlways, true
	}
	return "", false
}

// Features are what a team does beyond its one voice, fixed when it
// starts (as its roster is): its members speak in their own names
// (Personas), it reads and writes its channel's notes (Memory), a
// reviewer checks its replies (Review).
type Features struct {
	Personas bool
	Memory   bool
	Review   ReviewMode
}

// DefaultFeatures is what a channel's teams get when nothing says
// otherwise: memory on, the rest off.
func DefaultFeatures() Features { return Features{Memory: true, Review: ReviewOff} }

// Reviews reports whether a turn's reply is reviewed: merged replies when
// review is on, every reply when it is always.
func (f Features) Reviews(merged bool) bool {
	return f.Review == ReviewAlways || (f.Review == ReviewOn && merged)
}

// FeatureSettings is one source's say on a channel's features: nil leaves
// a feature to the next source.
type FeatureSettings struct {
	Personas *bool
	Memory   *bool
	Review   *ReviewMode
}

// Empty reports whether the settings say nothing.
func (s FeatureSettings) Empty() bool { return s.Personas == nil && s.Memory == nil && s.Review == nil }

// over applies s over f: what s says wins.
func (s FeatureSettings) over(f Features) Features {
	if s.Personas != nil {
		f.Personas = *s.Personas
	}
	if s.Memory != nil {
		f.Memory = *s.Memory
	}
	if s.Review != nil {
		f.Review = *s.Review
	}
	return f
}

// Merge returns s with what o says where s says nothing.
func (s FeatureSettings) Merge(o FeatureSettings) FeatureSettings {
	if s.Personas == nil {
		s.Personas = o.Personas
	}
	if s.Memory == nil {
		s.Memory = o.Memory
	}
	if s.Review == nil {
		s.Review = o.Review
	}
	return s
}

// FeatureEntry is a scope's features as admins set them by command.
type FeatureEntry struct {
	Scope     RoleScope
	Settings  FeatureSettings
	UpdatedBy string
	UpdatedAt time.Time
}

// FeatureStore is what resolving and changing features needs from
// Postgres.
type FeatureStore interface {
	// ConfiguredFeatures returns the features set by command for a
	// channel and for its whole guild (Scope.ChannelID ""), when set.
	ConfiguredFeatures(ctx context.Context, guildID, channelID string) ([]FeatureEntry, error)
	// SetFeatures changes what a scope says about its features (a nil
	// field is left as it was; clear lists the features to leave to the
	// next source again) and records the change in the roles' audit
	// trail, in one transaction.
	SetFeatures(ctx context.Context, scope RoleScope, set FeatureSettings, clear []string, by string) error
}

// FeatureLayer is one source's say on a channel's features, most
// specific first in Resolution.
type FeatureLayer struct {
	Source   RoleSource
	Scope    RoleScope
	Settings FeatureSettings
}

// ResolveFeatures is what a channel's teams get: each feature from the
// most specific source that says something of it (commands for the
// channel, then the guild, then the roles file's channel, guild and
// default), else DefaultFeatures.
func ResolveFeatures(layers []FeatureLayer) Features {
	var s FeatureSettings
	for _, l := range layers {
		s = s.Merge(l.Settings)
	}
	return s.over(DefaultFeatures())
}

// featureLayers orders a channel's sources of features, most specific
// first, leaving out those that say nothing.
func featureLayers(configured []FeatureEntry, file map[RoleScope]FeatureSettings, guildID, channelID string) []FeatureLayer {
	var layers []FeatureLayer
	add := func(source RoleSource, scope RoleScope, s FeatureSettings) {
		if !s.Empty() {
			layers = append(layers, FeatureLayer{Source: source, Scope: scope, Settings: s})
		}
	}
	fromDB := func(scope RoleScope) FeatureSettings {
		for _, e := range configured {
			if e.Scope == scope {
				return e.Settings
			}
		}
		return FeatureSettings{}
	}
	channel, guild := RoleScope{GuildID: guildID, ChannelID: channelID}, RoleScope{GuildID: guildID}
	if guildID != "" {
		if channelID != "" {
			add(SourceChannel, channel, fromDB(channel))
		}
		add(SourceGuild, guild, fromDB(guild))
		if channelID != "" {
			add(SourceFile, channel, file[channel])
		}
		add(SourceFile, guild, file[guild])
	}
	add(SourceFile, RoleScope{}, file[RoleScope{}])
	return layers
}

// Feature names, as the roles file, /roles features and the audit trail
// write them.
const (
	FeaturePersonas = "personas"
	FeatureMemory   = "memory"
	FeatureReview   = "review"
)

// FeatureLine says in one line what a channel's teams get, for /roles
// list and the kickoff: "personas off · memory on · review on".
func FeatureLine(f Features) string {
	onOff := func(b bool) string {
		if b {
			return "on"
		}
		return "off"
	}
	return fmt.Sprintf("personas %s · memory %s · review %s", onOff(f.Personas), onOff(f.Memory), f.Review)
}

// FeatureConfig resolves which features a channel's teams get and lets
// its admins change them.
type FeatureConfig struct {
	store FeatureStore
	file  map[RoleScope]FeatureSettings
}

// NewFeatureConfig returns the resolver over the features set by command
// (store) and the roles file's (file, by scope; nil without a file).
func NewFeatureConfig(store FeatureStore, file map[RoleScope]FeatureSettings) *FeatureConfig {
	return &FeatureConfig{store: store, file: file}
}

// Layers returns every source that says something of a channel's
// features, most specific first.
func (c *FeatureConfig) Layers(ctx context.Context, guildID, channelID string) ([]FeatureLayer, error) {
	configured, err := c.store.ConfiguredFeatures(ctx, guildID, channelID)
	if err != nil {
		return nil, fmt.Errorf("resolve features: %w", err)
	}
	return featureLayers(configured, c.file, guildID, channelID), nil
}

// For returns the features a new team in the channel gets. Its signature
// fits ServiceConfig.Features.
func (c *FeatureConfig) For(ctx context.Context, guildID, channelID string) (Features, error) {
	layers, err := c.Layers(ctx, guildID, channelID)
	if err != nil {
		return Features{}, err
	}
	return ResolveFeatures(layers), nil
}

// Set changes a scope's features on behalf of an admin (by): set says
// what to turn on or off, clear which features to leave to the next
// source again. Nothing to change is a *RoleError.
func (c *FeatureConfig) Set(ctx context.Context, scope RoleScope, set FeatureSettings, clear []string, by string) error {
	if scope.GuildID == "" {
		return fmt.Errorf("set features: no guild")
	}
	if set.Empty() && len(clear) == 0 {
		return roleErrorf("Say what to change: personas, memory or review (or inherit to clear them).")
	}
	if err := c.store.SetFeatures(ctx, scope, set, clear, by); err != nil {
		return fmt.Errorf("set features: %w", err)
	}
	return nil
}

// teamFeatures resolves a new team's features: its channel's, with the
// review mode its starter chose, if any.
func (s *Service) teamFeatures(ctx context.Context, n NewSession) (Features, error) {
	f := DefaultFeatures()
	if s.cfg.Features != nil {
		var err error
		if f, err = s.cfg.Features(ctx, n.GuildID, n.ChannelID); err != nil {
			return Features{}, fmt.Errorf("resolve features: %w", err)
		}
	}
	if n.Review != "" {
		f.Review = n.Review
	}
	return f, nil
}

// RoleFeatures is a change of a scope's features in the roles' audit
// trail; its Names are the features changed.
const RoleFeatures RoleAction = "features"
