package bot

import (
	"context"
	"fmt"
	"slices"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// Discord JSON error codes for a member or user that does not exist.
const (
	codeUnknownMember = 10007
	codeUnknownUser   = 10013
)

var _ master.Guilds = (*Channels)(nil)

// GuildMember computes, server-side, a member's permissions as Discord
// does: in the guild from the @everyone role and the member's roles (all
// of them for the owner or an administrator), and in a channel with its
// overwrites applied on top (a thread takes its parent's). It reads the
// member, the guild and the channel over REST, not from the gateway
// cache, where roles and overwrites may lag. master.ErrNotFound when the
// user is not a member of the guild.
func (c *Channels) GuildMember(ctx context.Context, guildID, channelID, userID string) (master.GuildMember, error) {
	mem, err := c.s.GuildMember(guildID, userID, discordgo.WithContext(ctx))
	if err != nil {
		if code := discordCode(err); code == codeUnknownMember || code == codeUnknownUser {
			return master.GuildMember{}, master.ErrNotFound
		}
		return master.GuildMember{}, fmt.Errorf("look up member %s: %w", userID, err)
	}
	g, err := c.s.Guild(guildID, discordgo.WithContext(ctx))
	if err != nil {
		return master.GuildMember{}, fmt.Errorf("look up guild %s: %w", guildID, err)
	}
	var overwrites []*discordgo.PermissionOverwrite
	if channelID != "" {
		ch, err := c.s.Channel(channelID, discordgo.WithContext(ctx))
		if err == nil && ch.IsThread() {
			ch, err = c.s.Channel(ch.ParentID, discordgo.WithContext(ctx))
		}
		if err != nil {
			return master.GuildMember{}, fmt.Errorf("look up channel %s: %w", channelID, err)
		}
		if ch.GuildID != "" && ch.GuildID != guildID {
			return master.GuildMember{}, fmt.Errorf("channel %s is not in guild %s", channelID, guildID)
		}
		overwrites = ch.PermissionOverwrites
	}
	return master.GuildMember{Roles: mem.Roles, Permissions: permissions(g, overwrites, userID, mem.Roles)}, nil
}

// permissions is Discord's permission computation: base permissions from
// the @everyone role and the member's roles, everything for the owner or
// an administrator; then a channel's overwrites, @everyone's first, then
// the member's roles' together (denies, then allows), then the member's
// own.
func permissions(g *discordgo.Guild, overwrites []*discordgo.PermissionOverwrite, userID string, roles []string) int64 {
	if userID == g.OwnerID {
		return discordgo.PermissionAll
	}
	var perms int64
	for _, r := range g.Roles {
		if r.ID == g.ID || slices.Contains(roles, r.ID) {
			perms |= r.Permissions
		}
	}
	if perms&discordgo.PermissionAdministrator != 0 {
		return discordgo.PermissionAll
	}
	var roleDeny, roleAllow int64
	var member *discordgo.PermissionOverwrite
	for _, o := range overwrites {
		switch {
		case o.Type == discordgo.PermissionOverwriteTypeRole && o.ID == g.ID:
			perms = perms&^o.Deny | o.Allow
		case o.Type == discordgo.PermissionOverwriteTypeRole && slices.Contains(roles, o.ID):
			roleDeny |= o.Deny
			roleAllow |= o.Allow
		case o.Type == discordgo.PermissionOverwriteTypeMember && o.ID == userID:
			member = o
		}
	}
	perms = perms&^roleDeny | roleAllow
	if member != nil {
		perms = perms&^member.Deny | member.Allow
	}
	return perms
}
