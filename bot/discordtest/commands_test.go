package discordtest_test

import (
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
)

func TestBulkOverwriteCommands(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	perms := int64(discordgo.PermissionManageThreads)
	ask := &discordgo.ApplicationCommand{
		Name:                     "ask",
		Description:              "Ask a question",
		DefaultMemberPermissions: &perms,
		Options: []*discordgo.ApplicationCommandOption{
			{Type: discordgo.ApplicationCommandOptionString, Name: "question", Description: "What to ask", Required: true},
		},
	}
	ping := &discordgo.ApplicationCommand{Name: "ping", Description: "Pong"}

	global, err := s.ApplicationCommandBulkOverwrite(dc.AppID(), "", []*discordgo.ApplicationCommand{ping})
	if err != nil {
		t.Fatalf("global overwrite: %v", err)
	}
	guild := registerGuild(t, s, dc, ask, ping)
	if len(global) != 1 || global[0].ID == "" || global[0].ApplicationID != dc.AppID() {
		t.Errorf("got global commands %+v, want ping with an id", global)
	}
	if len(guild) != 2 || guild[0].GuildID != dc.GuildID() || *guild[0].DefaultMemberPermissions != perms {
		t.Errorf("got guild commands %+v, want ask and ping in the guild", guild)
	}

	again := registerGuild(t, s, dc, ask)
	if again[0].ID != guild[0].ID {
		t.Errorf("overwrite changed the id of ask from %s to %s", guild[0].ID, again[0].ID)
	}
	if got := dc.Commands(dc.GuildID()); len(got) != 1 || got[0].Name != "ask" || got[0].Options[0].Name != "question" {
		t.Errorf("got guild commands %+v, want only ask", got)
	}
	listed, err := s.ApplicationCommands(dc.AppID(), "")
	if err != nil || len(listed) != 1 || listed[0].Name != "ping" {
		t.Errorf("got global commands %v, %v; want ping", listed, err)
	}
	if got := dc.Calls(discordtest.RouteOverwriteGuildCommands); got != 2 {
		t.Errorf("got %d guild overwrites, want 2", got)
	}
}

func TestInvalidCommandsAreRejected(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	for name, cmd := range map[string]*discordgo.ApplicationCommand{
		"uppercase name":      {Name: "Ask", Description: "d"},
		"no description":      {Name: "ask"},
		"long description":    {Name: "ask", Description: strings.Repeat("x", 101)},
		"optional before req": {Name: "ask", Description: "d", Options: []*discordgo.ApplicationCommandOption{{Type: discordgo.ApplicationCommandOptionString, Name: "a", Description: "d"}, {Type: discordgo.ApplicationCommandOptionString, Name: "b", Description: "d", Required: true}}},
	} {
		_, err := s.ApplicationCommandBulkOverwrite(dc.AppID(), dc.GuildID(), []*discordgo.ApplicationCommand{cmd})
		if restCode(err) != 50035 {
			t.Errorf("%s: got %v, want 50035", name, err)
		}
	}
	if _, err := s.ApplicationCommandBulkOverwrite("1", dc.GuildID(), nil); restCode(err) != 50001 {
		t.Errorf("wrong application: got %v, want 50001 Missing Access", err)
	}
}
