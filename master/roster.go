package master

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

// RoleScope is where a roster is configured: one channel of a guild, a
// whole guild (ChannelID ""), or, in the roles file only, every guild
// (both "").
type RoleScope struct {
	GuildID   string
	ChannelID string
}

// String names the scope for errors and logs.
func (s RoleScope) String() string {
	switch {
	case s.GuildID == "":
		return "default roster"
	case s.ChannelID == "":
		return "guild " + s.GuildID
	default:
		return "guild " + s.GuildID + ", channel " + s.ChannelID
	}
}

// RoleSource is where a channel's roster comes from.
type RoleSource string

// Role sources, most specific first. A channel's roster is the first one
// that defines at least one role.
const (
	SourceChannel RoleSource = "channel"  // set by command for the channel
	SourceGuild   RoleSource = "guild"    // set by command for the whole guild
	SourceFile    RoleSource = "file"     // CALLON_ROLES_FILE: its channel, guild or default roster
	SourceBuiltin RoleSource = "built-in" // DefaultRoles
)

// RoleEntry is a role as configured, with where it comes from and, for
// roles set by command, who changed it last and when.
type RoleEntry struct {
	Role
	Source    RoleSource
	Scope     RoleScope
	UpdatedBy string    // a user id; "" for file and built-in roles
	UpdatedAt time.Time // zero for file and built-in roles
}

// RoleLayer is one source's roster for a channel.
type RoleLayer struct {
	Source RoleSource
	Scope  RoleScope
	Roles  []RoleEntry
}

// Label describes the layer for people: where its roles are defined.
func (l RoleLayer) Label() string {
	switch {
	case l.Source == SourceChannel:
		return "this channel"
	case l.Source == SourceGuild:
		return "this server"
	case l.Source == SourceFile && l.Scope.ChannelID != "":
		return "roles file (this channel)"
	case l.Source == SourceFile && l.Scope.GuildID != "":
		return "roles file (this server)"
	case l.Source == SourceFile:
		return "roles file (default)"
	default:
		return "built-in roles"
	}
}

// RoleStore is what roster resolution and administration need from
// Postgres.
type RoleStore interface {
	// ConfiguredRoles returns the roles set by command for a channel and
	// for its whole guild (Scope.ChannelID ""), each scope in the order
	// its roles were first set.
	ConfiguredRoles(ctx context.Context, guildID, channelID string) ([]RoleEntry, error)
	// SetRole creates or replaces a role of a scope and records the
	// change. ErrRosterFull when the role is new and the scope already
	// holds max roles.
	SetRole(ctx context.Context, scope RoleScope, r Role, by string, max int) (created bool, err error)
	// RemoveRole deletes a role of a scope and records the change;
	// ErrNotFound when the scope has no such role.
	RemoveRole(ctx context.Context, scope RoleScope, name, by string) error
	// ResetRoles deletes every role of a scope and records the change if
	// there was any; it returns the names removed.
	ResetRoles(ctx context.Context, scope RoleScope, by string) ([]string, error)
	// RoleChanges returns the latest changes to a channel's roles and to
	// its guild's, newest first.
	RoleChanges(ctx context.Context, guildID, channelID string, limit int) ([]RoleChange, error)
}

// Roles resolves which roles a channel's teams may use, and lets server
// admins change them within the operator's policy.
//
// A channel's roster is the first of these that defines at least one
// role, and only that one (rosters are never merged):
//
//  1. roles set by command for the channel (a thread: its parent channel);
//  2. roles set by command for the guild;
//  3. the roles file's roster for the channel;
//  4. the roles file's roster for the guild;
//  5. the roles file's default roster;
//  6. the built-in roles (DefaultRoles).
//
// Commands come before the file because they are what admins change
// live: the file is the deployment's baseline.
type Roles struct {
	store  RoleStore
	file   map[RoleScope][]Role
	policy RolePolicy
}

// NewRoles returns the resolver. file holds the roles file's rosters by
// scope (nil without a file); each is checked against policy, and the
// first problem is returned naming its scope and role.
func NewRoles(store RoleStore, file map[RoleScope][]Role, policy RolePolicy) (*Roles, error) {
	if err := policy.CheckFile(file); err != nil {
		return nil, err
	}
	return &Roles{store: store, file: file, policy: policy}, nil
}

// CheckFile reports the first problem with the roles file's rosters,
// naming its scope and role; scopes are checked in id order.
func (p RolePolicy) CheckFile(file map[RoleScope][]Role) error {
	scopes := slices.SortedFunc(maps.Keys(file), func(a, b RoleScope) int {
		return cmp.Or(cmp.Compare(a.GuildID, b.GuildID), cmp.Compare(a.ChannelID, b.ChannelID))
	})
	for _, scope := range scopes {
		if err := p.CheckRoster(file[scope]); err != nil {
			return fmt.Errorf("%s: %w", scope, err)
		}
	}
	return nil
}

// Policy returns the operator's limits on roles.
func (r *Roles) Policy() RolePolicy { return r.policy }

// Resolve returns every source that defines roles for a channel of a
// guild, most specific first: the first layer is the channel's roster.
// There is always at least one layer, the built-in roles being last.
func (r *Roles) Resolve(ctx context.Context, guildID, channelID string) ([]RoleLayer, error) {
	configured, err := r.store.ConfiguredRoles(ctx, guildID, channelID)
	if err != nil {
		return nil, fmt.Errorf("resolve roles: %w", err)
	}
	return resolve(configured, r.file, guildID, channelID), nil
}

// Roster returns the roles a new team in the channel gets: the first
// layer of Resolve. A role naming a model the policy no longer allows
// runs on the default worker model. Its signature fits NewService.
func (r *Roles) Roster(ctx context.Context, guildID, channelID string) ([]Role, error) {
	layers, err := r.Resolve(ctx, guildID, channelID)
	if err != nil {
		return nil, err
	}
	roster := make([]Role, len(layers[0].Roles))
	for i, e := range layers[0].Roles {
		roster[i] = e.Role
		if !r.policy.ModelAllowed(e.Model) {
			roster[i].Model = ""
		}
	}
	return roster, nil
}

// resolve orders a channel's sources, most specific first, leaving out
// the empty ones; built-in roles close the list.
func resolve(configured []RoleEntry, file map[RoleScope][]Role, guildID, channelID string) []RoleLayer {
	channel := RoleScope{GuildID: guildID, ChannelID: channelID}
	guild := RoleScope{GuildID: guildID}
	var layers []RoleLayer
	add := func(source RoleSource, scope RoleScope, roles []RoleEntry) {
		if len(roles) > 0 {
			layers = append(layers, RoleLayer{Source: source, Scope: scope, Roles: roles})
		}
	}
	fromDB := func(scope RoleScope, source RoleSource) []RoleEntry {
		var out []RoleEntry
		for _, e := range configured {
			if e.Scope == scope {
				e.Source = source
				out = append(out, e)
			}
		}
		return out
	}
	fromFile := func(scope RoleScope) []RoleEntry {
		return entries(file[scope], SourceFile, scope)
	}
	if guildID != "" {
		if channelID != "" {
			add(SourceChannel, channel, fromDB(channel, SourceChannel))
		}
		add(SourceGuild, guild, fromDB(guild, SourceGuild))
		if channelID != "" {
			add(SourceFile, channel, fromFile(channel))
		}
		add(SourceFile, guild, fromFile(guild))
	}
	add(SourceFile, RoleScope{}, fromFile(RoleScope{}))
	add(SourceBuiltin, RoleScope{}, entries(DefaultRoles(), SourceBuiltin, RoleScope{}))
	return layers
}

func entries(roles []Role, source RoleSource, scope RoleScope) []RoleEntry {
	out := make([]RoleEntry, len(roles))
	for i, r := range roles {
		out[i] = RoleEntry{Role: r, Source: source, Scope: scope}
	}
	return out
}
