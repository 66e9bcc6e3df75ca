package discordtest_test

import (
	"slices"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
)

// Roles, members' roles and channel overwrites reach the bot over REST
// and on its members' messages, so it can compute permissions itself.
func TestRolesMembersAndOverwrites(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	in := watchMessages(s)
	g := dc.GuildID()
	bob := dc.AddUser("bob")
	mods := dc.AddRole(g, "mods", discordgo.PermissionManageGuild)
	dc.SetMemberRoles(g, bob, mods)
	general := dc.ChannelID("general")
	dc.SetOverwrite(general, discordtest.Overwrite{ID: g, Deny: discordgo.PermissionViewChannel})
	dc.SetOverwrite(general, discordtest.Overwrite{ID: bob, Member: true, Allow: discordgo.PermissionViewChannel})

	m, err := s.GuildMember(g, bob)
	if err != nil || !slices.Equal(m.Roles, []string{mods}) || m.User.ID != bob {
		t.Fatalf("GuildMember = %+v, %v; want bob with the mods role", m, err)
	}
	if _, err := s.GuildMember(g, "12345"); restCode(err) != 10007 {
		t.Errorf("unknown member: got %v, want code 10007", err)
	}
	guild, err := s.Guild(g)
	if err != nil || guild.OwnerID != dc.UserID() || len(guild.Roles) != 3 || guild.Roles[2].ID != mods ||
		guild.Roles[2].Permissions != discordgo.PermissionManageGuild || guild.Roles[0].ID != g || !guild.Roles[1].Managed {
		t.Fatalf("Guild = %+v, %v; want @everyone, the bot's managed role and mods, owned by the default user", guild, err)
	}
	// The bot has its own role, with its invite's permissions.
	if m, err := s.GuildMember(g, dc.BotUserID()); err != nil || !slices.Equal(m.Roles, []string{guild.Roles[1].ID}) ||
		guild.Roles[1].Permissions&discordgo.PermissionEmbedLinks == 0 {
		t.Errorf("bot member = %+v, %v; want the managed role, with Embed Links", m, err)
	}
	ch, err := s.Channel(general)
	if err != nil || len(ch.PermissionOverwrites) != 2 {
		t.Fatalf("Channel = %+v, %v; want two overwrites", ch, err)
	}
	if o := ch.PermissionOverwrites[1]; o.ID != bob || o.Type != discordgo.PermissionOverwriteTypeMember || o.Allow != discordgo.PermissionViewChannel {
		t.Errorf("member overwrite = %+v", o)
	}
	msg := dc.UserMessage(general, bob, "hello")
	dc.WaitFor(t, func() bool { return len(in.find(msg.ID)) == 1 }, "bob's message")
	if got := in.find(msg.ID)[0].Member; got == nil || !slices.Equal(got.Roles, []string{mods}) {
		t.Errorf("message member = %+v, want bob's roles", got)
	}
}
