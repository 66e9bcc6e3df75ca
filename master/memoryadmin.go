package master

import (
	"context"
	"fmt"
)

// MemoryAdminStore is what /memory needs from Postgres. Each change is
// recorded in the memory's audit trail with the admin who made it.
type MemoryAdminStore interface {
	// Notes returns a channel's notes, most recently remembered first.
	Notes(ctx context.Context, guildID, channelID string) ([]Note, error)
	// ForgetNote deletes one note of a channel; false when it has none
	// by that id.
	ForgetNote(ctx context.Context, guildID, channelID string, id int64, by string) (bool, error)
	// ClearNotes deletes every note of a channel; it returns how many.
	ClearNotes(ctx context.Context, guildID, channelID, by string) (int, error)
}

// MemoryAdmin is /memory: a channel's admins see and edit the notes its
// teams keep. Every entrance (the bot's command, a chat's) goes through
// it, so the permission check is made once, here.
type MemoryAdmin struct {
	store MemoryAdminStore
}

// NewMemoryAdmin returns /memory over store.
func NewMemoryAdmin(store MemoryAdminStore) *MemoryAdmin { return &MemoryAdmin{store: store} }

// notMemoryAdmin refuses a member who may not manage the channel.
var notMemoryAdmin = &Error{Code: ENotAllowed, Err: ErrNotAllowed,
	Message: "Only members who can manage this channel (or administrators) can see and change its teams' memory."}

// mayAdmin is /memory's permission: Manage Channels, as for the
// channel's roles; never a bot.
func mayAdmin(a Actor) error {
	if a.Bot || !MayManageRoles(a.Permissions) {
		return notMemoryAdmin
	}
	return nil
}

// Show returns a channel's notes for an admin.
func (m *MemoryAdmin) Show(ctx context.Context, a Actor, guildID, channelID string) ([]Note, error) {
	if err := mayAdmin(a); err != nil {
		return nil, err
	}
	notes, err := m.store.Notes(ctx, guildID, channelID)
	if err != nil {
		return nil, fmt.Errorf("show memory: %w", err)
	}
	return notes, nil
}

// Forget deletes one note of a channel for an admin: every team of the
// channel stops seeing it at its next decision, and a task given it and
// not yet run does not get it.
func (m *MemoryAdmin) Forget(ctx context.Context, a Actor, guildID, channelID string, id int64) error {
	if err := mayAdmin(a); err != nil {
		return err
	}
	ok, err := m.store.ForgetNote(ctx, guildID, channelID, id, a.UserID)
	if err != nil {
		return fmt.Errorf("forget note: %w", err)
	}
	if !ok {
		return &Error{Code: ENotFound, Err: ErrNotFound, Message: fmt.Sprintf("This channel has no note %d: `/memory show` lists them.", id)}
	}
	return nil
}

// Clear deletes every note of a channel for an admin and returns how
// many there were.
func (m *MemoryAdmin) Clear(ctx context.Context, a Actor, guildID, channelID string) (int, error) {
	if err := mayAdmin(a); err != nil {
		return 0, err
	}
	n, err := m.store.ClearNotes(ctx, guildID, channelID, a.UserID)
	if err != nil {
		return 0, fmt.Errorf("clear memory: %w", err)
	}
	return n, nil
}
