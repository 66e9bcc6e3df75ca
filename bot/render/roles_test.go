package render_test

import (
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/master"
)

func TestRenderRolesFitsOneMessage(t *testing.T) {
	t.Parallel()
	var roles []master.RoleEntry
	for i := range 25 {
		e := set("1", "2", "role-"+strings.Repeat("x", i))
		e.Source = master.SourceChannel
		e.Description = strings.Repeat("description ", 20)
		e.Prompt = strings.Repeat("prompt ", 100)
		e.Model = "retired"
		roles = append(roles, e)
	}
	layers := []master.RoleLayer{
		{Source: master.SourceChannel, Scope: master.RoleScope{GuildID: "1", ChannelID: "2"}, Roles: roles},
		{Source: master.SourceBuiltin, Roles: []master.RoleEntry{{Role: role("a"), Source: master.SourceBuiltin}}},
	}
	changes := []master.RoleChange{{Scope: master.RoleScope{GuildID: "1"}, Action: master.RoleReset, Names: []string{"a", "b"}, By: "u2", At: time.Unix(1700000000, 0)}}
	got := render.Roles("2", layers, changes, master.RolePolicy{DefaultModel: "mini"})
	if n := len([]rune(got)); n > master.MaxMessageLen {
		t.Errorf("got %d characters, want at most %d", n, master.MaxMessageLen)
	}
	for _, want := range []string{"<#2>", "this channel (25)", "**role-**", "source: channel · set by <@u1> <t:1700000000:R>", "`mini` (`retired` is no longer allowed)", "more"} {
		if !strings.Contains(got, want) {
			t.Errorf("got:\n%s\nwant it to contain %q", got, want)
		}
	}

	small := render.Roles("2", layers[1:], changes, master.RolePolicy{DefaultModel: "mini"})
	for _, want := range []string{"built-in roles (1)", "**a**", "`mini` (default)", "Recent changes", "<@u2> reset this server (removed `a`, `b`)"} {
		if !strings.Contains(small, want) {
			t.Errorf("got:\n%s\nwant it to contain %q", small, want)
		}
	}
}

func role(name string) master.Role {
	return master.Role{Name: name, Description: name + " does things", Prompt: "You are good at " + name + "."}
}

func set(guild, channel, name string) master.RoleEntry {
	return master.RoleEntry{Role: role(name), Scope: master.RoleScope{GuildID: guild, ChannelID: channel}, UpdatedBy: "u1", UpdatedAt: time.Unix(1700000000, 0)}
}
