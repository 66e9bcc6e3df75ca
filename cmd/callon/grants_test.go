package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

// delegateThenMerge is a master that delegates one task to role, then
// replies with the results it was shown; it holds no state, so any
// number of teams may share it.
func delegateThenMerge(role string) llmtest.Script {
	return func(r llmtest.Request) llmtest.Reply {
		if len(r.ToolResults()) > 0 {
			return reply("Merged:\n" + toolResults(r))
		}
		return delegate(task{Role: role, Instruction: "look"})
	}
}

// twoGuilds is a fake Discord with guilds A and B, and their ids.
func twoGuilds(t *testing.T) (*discordtest.Server, string, string) {
	dc := discordtest.New(t, discordtest.WithGuild("A", "a-general"), discordtest.WithGuild("B", "b-general"))
	return dc, dc.GuildIDs()[0], dc.GuildIDs()[1]
}

// The operator's MCP server granted to guild A is guild A's only. A role
// the roles file gives it (every guild's default roster) calls it in
// guild A; in guild B the same role is neither offered it nor allowed to
// call it, whatever the model asks. A guild B admin cannot give it to a
// role either, and giving a role tools at all needs Manage Server, not
// Manage Channels. (Before grants, a Manage Channels member of any guild
// could give hostfs.* to a role and its workers called the host's server.)
func TestToolsAreGrantedPerGuild(t *testing.T) {
	t.Parallel()
	dc, guildA, guildB := twoGuilds(t)
	w := newWorld(t, dc, llmtest.Switch(
		llmtest.Match(masterPrompt, delegateThenMerge("scout")),
		llmtest.Match("You are the scout", callThenReport(llmtest.Call("hostfs__echo", map[string]string{"text": "HOST SECRET"})))))
	w.withRolesFile(fmt.Sprintf(`
mcp_servers:
  hostfs:
    command: [%q]
    guilds: [%q]
roles:
  - {name: scout, description: Scouts, prompt: You scout., tools: [hostfs.echo, fetch_url]}
`, mcpServerBin, guildA))
	w.start()

	threadA := w.teamIn("a-general", "Look in A")
	mustContain(t, "guild A's reply", w.waitReply(threadA, w.say(threadA, "go")), "TOOL SAID: HOST SECRET")
	threadB := w.teamIn("b-general", "Look in B")
	gotB := w.waitReply(threadB, w.say(threadB, "go"))
	mustContain(t, "guild B's reply", gotB, `there is no tool "hostfs__echo"`)
	if strings.Contains(gotB, "HOST SECRET") {
		t.Errorf("guild B's worker reached the host's server: %q", gotB)
	}
	var offered [][]string
	for _, r := range workerRequests(w.ai.Requests(), "scout") {
		offered = append(offered, r.Request.ToolNames())
	}
	if !slices.Contains(offered[0], "hostfs__echo") || slices.Contains(offered[len(offered)-1], "hostfs__echo") {
		t.Errorf("offered %q: want hostfs__echo in guild A's first request, not in guild B's", offered)
	}

	// Guild B's admins.
	bGeneral := w.dc.ChannelID("b-general")
	owner := w.dc.AddUser("b-owner")
	w.dc.SetMemberRoles(guildB, owner, w.dc.AddRole(guildB, "owners", discordgo.PermissionManageGuild))
	set := func(user string, tools string) string {
		return w.command(bGeneral, user, admin, "roles", setRole("digger", "Digs", "You dig.", discordtest.StringOption("tools", tools))).Content
	}
	mustContain(t, "a server not granted", set(owner, "hostfs.*"), `"hostfs" is not available in this Discord server`)
	channelAdmin := w.dc.AddUser("b-channel-admin")
	mustContain(t, "tools by Manage Channels", set(channelAdmin, "fetch_url"), "needs the **Manage Server** permission")
	mustContain(t, "fetch_url by Manage Server", set(owner, "fetch_url"), "**digger** added to")
	if n := w.count(`SELECT count(*)::int FROM channel_roles WHERE guild_id = $1 AND name = 'digger'`, guildB); n != 1 {
		t.Errorf("%d roles digger saved, want the one with fetch_url", n)
	}
}

// The lethal combination needs a person: a role that reads private data
// (an MCP server's tools, presumed to unless the operator says otherwise)
// and can fetch pages has each fetch to a host off outbound_allow
// approved first, so a steered worker cannot send what it read anywhere
// unseen; a role that only fetches is not asked. (fetch_url never needed
// an approval.)
func TestLethalCombinationAsksAPerson(t *testing.T) {
	t.Parallel()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "PAGE TEXT") }))
	t.Cleanup(page.Close)
	fetch := llmtest.Call("fetch_url", map[string]string{"url": page.URL + "/?q=what-i-read"})
	w := newWorld(t, discordtest.New(t), llmtest.Switch(
		llmtest.Match(masterPrompt, func(r llmtest.Request) llmtest.Reply {
			if len(r.ToolResults()) > 0 {
				return reply("Merged:\n" + toolResults(r))
			}
			return delegate(task{Role: "snoop", Instruction: "read and send"}, task{Role: "browser", Instruction: "browse"})
		}),
		llmtest.Match("You are the snoop", callThenReport(fetch)),
		llmtest.Match("You are the browser", callThenReport(fetch))), "CALLON_FETCH_ALLOW", "127.0.0.1")
	w.withRolesFile(fmt.Sprintf(`
mcp_servers:
  files:
    command: [%q]
    guilds: all
outbound_allow: [docs.example.com]
roles:
  - {name: snoop, description: Reads files and pages, prompt: You read., tools: [files.*, fetch_url]}
  - {name: browser, description: Reads pages, prompt: You browse., tools: [fetch_url]}
`, mcpServerBin))
	w.start()
	thread := w.team("Read things")
	msg := w.say(thread, "go")
	req, _, deny := w.approvalRequest(thread, 1)
	mustContain(t, "request", req.Content, "**snoop** asks to call `fetch_url`", "what-i-read")
	w.dc.ClickButton(t, discordtest.ClickButton{MessageID: req.ID, CustomID: deny, ChannelID: thread, Permissions: member})
	got := w.waitReply(thread, msg)
	mustContain(t, "reply", got, "TOOL SAID: A person denied this call", "TOOL SAID: URL: "+page.URL)
	if n := strings.Count(got, "PAGE TEXT"); n != 1 {
		t.Errorf("the page was fetched %d times, want once (by the browser only): %q", n, got)
	}
}
