package master

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// MayManageRoles reports whether a member with these permissions in a
// channel may change its roles (or its guild's).
func MayManageRoles(permissions int64) bool {
	return permissions&(PermManageChannels|PermAdministrator) != 0
}

// RoleAction is a kind of change to a scope's roles.
type RoleAction string

// Role actions, as the audit trail records them.
const (
	RoleSet    RoleAction = "set"
	RoleRemove RoleAction = "remove"
	RoleReset  RoleAction = "reset"
)

// RoleChange is one entry of the append-only audit trail of roles.
type RoleChange struct {
	Scope  RoleScope
	Action RoleAction
	Names  []string // the role set or removed; every role a reset removed
	By     string   // a user id
	At     time.Time
}

// SetRole creates or replaces a role of a scope on behalf of user by,
// within the policy: name, description, prompt, model and the roster
// cap. It reports whether the role is new. Problems the admin can fix
// are *RoleError.
func (r *Roles) SetRole(ctx context.Context, scope RoleScope, role Role, by string) (created bool, err error) {
	if scope.GuildID == "" {
		return false, errors.New("set role: no guild")
	}
	role = normalizeRole(role)
	if err := r.policy.CheckRoleIn(scope.GuildID, role); err != nil {
		return false, err
	}
	created, err = r.store.SetRole(ctx, scope, role, by, r.policy.MaxRoles)
	if errors.Is(err, ErrRosterFull) {
		return false, roleErrorf("%s already has %d roles, the most a team may have: remove one first", scopeLabel(scope), r.policy.MaxRoles)
	}
	if err != nil {
		return false, fmt.Errorf("set role: %w", err)
	}
	return created, nil
}

// RemoveRole deletes a role of a scope on behalf of user by. A name the
// scope does not define is a *RoleError.
func (r *Roles) RemoveRole(ctx context.Context, scope RoleScope, name, by string) error {
	err := r.store.RemoveRole(ctx, scope, normalizeRole(Role{Name: name}).Name, by)
	if errors.Is(err, ErrNotFound) {
		return roleErrorf("%s has no role %q of its own", scopeLabel(scope), name)
	}
	if err != nil {
		return fmt.Errorf("remove role: %w", err)
	}
	return nil
}

// ResetRoles deletes every role of a scope on behalf of user by and
// returns their names; none is not an error.
func (r *Roles) ResetRoles(ctx context.Context, scope RoleScope, by string) ([]string, error) {
	names, err := r.store.ResetRoles(ctx, scope, by)
	if err != nil {
		return nil, fmt.Errorf("reset roles: %w", err)
	}
	return names, nil
}

// RoleChanges returns the latest changes to a channel's roles and its
// guild's, newest first.
func (r *Roles) RoleChanges(ctx context.Context, guildID, channelID string, limit int) ([]RoleChange, error) {
	changes, err := r.store.RoleChanges(ctx, guildID, channelID, limit)
	if err != nil {
		return nil, fmt.Errorf("role changes: %w", err)
	}
	return changes, nil
}

// scopeLabel names a scope for the admin changing it.
func scopeLabel(s RoleScope) string {
	if s.ChannelID == "" {
		return "this server"
	}
	return "this channel"
}
