package bot

import (
	"testing"

	"github.com/bwmarrin/discordgo"
)

func TestPermissions(t *testing.T) {
	t.Parallel()
	const (
		view   = discordgo.PermissionViewChannel
		send   = discordgo.PermissionSendMessages
		manage = discordgo.PermissionManageGuild
	)
	g := &discordgo.Guild{ID: "g", OwnerID: "owner", Roles: []*discordgo.Role{
		{ID: "g", Permissions: view | send}, // @everyone
		{ID: "mods", Permissions: manage},
		{ID: "admins", Permissions: discordgo.PermissionAdministrator},
	}}
	role := func(id string, allow, deny int64) *discordgo.PermissionOverwrite {
		return &discordgo.PermissionOverwrite{ID: id, Type: discordgo.PermissionOverwriteTypeRole, Allow: allow, Deny: deny}
	}
	member := func(id string, allow, deny int64) *discordgo.PermissionOverwrite {
		return &discordgo.PermissionOverwrite{ID: id, Type: discordgo.PermissionOverwriteTypeMember, Allow: allow, Deny: deny}
	}
	staff := []*discordgo.PermissionOverwrite{role("mods", view, 0), role("g", 0, view|send)} // @everyone listed last
	tests := []struct {
		name       string
		user       string
		roles      []string
		overwrites []*discordgo.PermissionOverwrite
		want       int64
	}{
		{"everyone, guild-level", "u", nil, nil, view | send},
		{"a role adds to @everyone", "u", []string{"mods"}, nil, view | send | manage},
		{"the owner has everything", "owner", nil, staff, discordgo.PermissionAll},
		{"an administrator has everything, overwrites or not", "u", []string{"admins"}, staff, discordgo.PermissionAll},
		{"@everyone denied in a staff channel", "u", nil, staff, 0},
		{"a role's allow beats @everyone's deny", "u", []string{"mods"}, staff, view | manage},
		{"the member's own overwrite comes last", "u", []string{"mods"}, append(staff, member("u", send, view)), send | manage},
		{"role denies, then role allows", "u", []string{"mods", "x"}, []*discordgo.PermissionOverwrite{role("x", 0, send), role("mods", send, 0)}, view | send | manage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := permissions(g, tt.overwrites, tt.user, tt.roles); got != tt.want {
				t.Errorf("%s: got %b, want %b", tt.name, got, tt.want)
			}
		})
	}
}
