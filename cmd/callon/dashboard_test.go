package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
	"github.com/chromedp/chromedp"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

const dashToken = "dashboard-token-for-the-browser-test"

// The dashboard in a real browser (Debian's Chromium, driven by
// chromedp) against callon on the fakes: refused without the token,
// signed in with it; a team appears on the open overview when /callon
// runs; a turn's timeline fills in on the open team page as its workers
// finish; the roles table shows the role that was blocked; a server
// admin signed in with Discord sees their server and is refused the
// other's team. Each page is a screenshot among the test's artifacts,
// and with -update in docs/screenshots.
func TestDashboardInTheBrowser(t *testing.T) {
	t.Parallel()
	b := newBrowser(t)
	researcherGo, writerGo := make(chan struct{}), make(chan struct{})
	script := llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply {
				return delegate(task{Role: "researcher", Instruction: "Collect what the beta changes"},
					task{Role: "writer", Instruction: "Draft the announcement"})
			},
			func(llmtest.Request) llmtest.Reply {
				return reply("Here is the plan: the research is in; the writer needs the press kit.")
			},
			func(llmtest.Request) llmtest.Reply { return reply("ok") })),
		llmtest.Match("You are the researcher", func(llmtest.Request) llmtest.Reply {
			<-researcherGo
			return report("Three changes: faster sync, offline mode, new pricing.").WithUsage(1800, 240)
		}),
		llmtest.Match("You are the writer", func(llmtest.Request) llmtest.Reply {
			<-writerGo
			return llmtest.Call("report", map[string]any{"status": "blocked", "result": "no access to the press kit"}).WithUsage(900, 60)
		}))
	dc := discordtest.New(t, discordtest.WithGuild("Alpha", "general"), discordtest.WithGuild("Beta", "ops"))
	addr := freeAddr(t)
	site := base(addr)
	w := setupWith(t, dc, script,
		"CALLON_HTTP_ADDR", addr,
		"CALLON_DASHBOARD_TOKEN", dashToken,
		"DISCORD_APP_ID", dc.AppID(),
		"DISCORD_CLIENT_SECRET", dc.OAuthClientSecret(),
		"CALLON_DASHBOARD_REDIRECT_URL", site+"/dashboard/auth/callback",
		"CALLON_PRICES", "gpt-4o-mini=0.15/0.6",
		// The browser goes to Discord's authorization page and back: as
		// localhost, on the same site as the dashboard.
		"DISCORD_API_URL", strings.Replace(dc.URL(), "127.0.0.1", "localhost", 1))
	alpha, beta := dc.GuildIDs()[0], dc.GuildIDs()[1]
	w.waitGet("http://"+addr+"/readyz", 200)
	op := b.tab()

	// Refused without the token: the login page, no data.
	op.do("open the dashboard signed out", chromedp.Navigate(site+"/dashboard/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	if txt := op.text(); strings.Contains(txt, "Overview") && !strings.Contains(txt, "Sign in") {
		t.Fatalf("signed out, the dashboard shows:\n%s", txt)
	}
	op.shot("login", "login")
	op.do("sign in with a wrong token", chromedp.SendKeys(chromedp.CSS("#token"), "not-the-token"), chromedp.Submit(chromedp.CSS("#token")))
	op.waitText("the refusal", "not the dashboard's")
	op.do("sign in", chromedp.Navigate(site+"/dashboard/login"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), dashToken), chromedp.Submit(chromedp.CSS("#token")))
	op.waitText("the overview", "Nothing to show yet")
	op.do("the live updates connect", chromedp.WaitVisible(chromedp.CSS("#live-status.on")))

	// A team appears live when /callon runs: no reload.
	mark := jsEval[bool](op, "window.stillHere = true")
	thread := w.team("Launch the beta in March")
	op.waitText("the new team on the open overview", "Launch the beta in March")
	if !mark || !jsEval[bool](op, "window.stillHere === true") {
		t.Error("the overview was reloaded to show the team, want a live update")
	}
	session := w.sessionOf(thread)
	betaThread := w.startTeamIn(dc.ChannelID("ops"), "Beta server's private roadmap")
	betaSession := w.sessionOf(betaThread)
	op.waitText("the other server's team", "Beta server's private roadmap")

	// A turn's timeline fills in as its workers finish.
	op.do("open the team", chromedp.Navigate(fmt.Sprintf("%s/dashboard/teams/%d", site, session)),
		chromedp.WaitVisible(chromedp.CSS("#live-status.on")))
	msg := w.say(thread, "plan the announcement")
	op.waitText("the round's tasks", "r1 writer")
	op.do("both workers at work", chromedp.WaitVisible(chromedp.CSS("#member-researcher .pill.run")),
		chromedp.WaitVisible(chromedp.CSS("#member-writer .pill.run")))
	op.shot("team-working")
	close(researcherGo)
	op.waitText("the researcher's result", "done · ")
	op.do("the writer still working", chromedp.WaitVisible(chromedp.CSS("#member-writer .pill.run")))
	close(writerGo)
	w.waitReply(thread, msg)
	op.waitText("the writer blocked", "blocked ·")
	op.waitText("the reply posted", "answered in")
	op.do("the timeline's bars", chromedp.WaitVisible(chromedp.CSS(".gantt .bar.task.ok")), chromedp.WaitVisible(chromedp.CSS(".gantt .bar.post")))
	if !jsEval[bool](op, "window.stillHere === undefined") {
		t.Error("window.stillHere survived a navigation")
	}
	op.shot("team", "team")

	// The roles table: the writer was blocked, with its reason.
	op.do("open the roles", chromedp.Navigate(site+"/dashboard/roles"), chromedp.WaitVisible(chromedp.CSS("table.roles")))
	op.waitText("the writer's failure", "no access to the press kit")
	op.shot("roles", "roles")
	op.do("open the signals", chromedp.Navigate(fmt.Sprintf("%s/dashboard/signals?team=%d", site, session)),
		chromedp.WaitVisible(chromedp.CSS("table.signals")))
	op.waitText("a task's completion", "TASK_COMPLETE")
	op.shot("signals", "signals")
	op.do("back to the overview", chromedp.Navigate(site+"/dashboard/"), chromedp.WaitVisible(chromedp.CSS(".guild")))
	op.waitText("today's turns", "turns answered today")
	op.shot("overview", "overview")
	op.do("a phone's screen", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	op.shot("overview-phone")

	// A server admin: Manage Server in Alpha only, signed in with
	// Discord, sees Alpha's team and is refused Beta's, like a team that
	// does not exist.
	bob := dc.AddUser("bob")
	dc.SetMemberRoles(alpha, bob, dc.AddRole(alpha, "admins", discordgo.PermissionManageServer))
	dc.AuthorizeAs(bob)
	admin := newBrowser(t).tab() // another person: a browser of their own
	admin.do("bob signs in with Discord", chromedp.Navigate(site+"/dashboard/"), chromedp.WaitVisible(chromedp.CSS("#discord")),
		chromedp.Click(chromedp.CSS("#discord")))
	admin.waitText("bob's overview", "Launch the beta in March")
	if txt := admin.text(); strings.Contains(txt, "Beta server's private roadmap") || strings.Contains(txt, beta) {
		t.Errorf("bob, an admin of Alpha only, sees Beta's team:\n%s", txt)
	}
	admin.do("bob guesses Beta's team", chromedp.Navigate(fmt.Sprintf("%s/dashboard/teams/%d", site, betaSession)))
	admin.waitText("the refusal", "There is no such team.")
	admin.shot("admin-refused-other-server")
	admin.do("bob's roles", chromedp.Navigate(site+"/dashboard/roles"), chromedp.WaitVisible(chromedp.CSS("table.roles")))
	if txt := admin.text(); !strings.Contains(txt, "writer") || strings.Contains(txt, beta) {
		t.Errorf("bob's roles page:\n%s", txt)
	}
	// Signed out: refused again.
	admin.do("bob signs out", chromedp.Click(chromedp.CSS(".who button")), chromedp.WaitVisible(chromedp.CSS("#discord")))
	admin.do("bob's overview signed out", chromedp.Navigate(site+"/dashboard/"), chromedp.WaitVisible(chromedp.CSS("#discord")))
	if strings.Contains(admin.text(), "Launch the beta") {
		t.Error("signed out, bob still sees a team")
	}
}
