package main

import (
	"strings"
	"sync"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

func reportBack(summary string) llmtest.Reply {
	return llmtest.Call("report_back", map[string]any{"summary": summary})
}

// teamReporting runs /callon in #general with report_to and returns the
// thread.
func (w *world) teamReporting(goal, reportTo string) string {
	w.t.Helper()
	general := w.dc.ChannelID("general")
	before := len(w.dc.Threads(general))
	r := w.command(general, w.dc.UserID(), 0, "callon", discordtest.StringOption("goal", goal), discordtest.ChannelOption("report_to", reportTo))
	if !strings.Contains(r.Content, "is ready in") {
		w.t.Fatalf("/callon report_to: %q", r.Content)
	}
	threads := w.dc.Threads(general)
	if len(threads) != before+1 {
		w.t.Fatalf("got %d threads, want %d", len(threads), before+1)
	}
	thread := threads[len(threads)-1].ID
	w.dc.WaitFor(w.t, func() bool { return len(w.botMessages(thread)) >= 1 }, "the kickoff message")
	return thread
}

func TestReportToAPlainChannel(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(
		llmtest.Calls(reportBack("The API is ready. @everyone rejoice"), reply("Reported to the product channel."))))))
	product := w.dc.ChannelID("random")
	thread := w.teamReporting("Build the API", product)
	if kickoff := w.botMessages(thread)[0].Content; !strings.Contains(kickoff, "Reports to <#"+product+">") {
		t.Errorf("kickoff does not say where the team reports:\n%s", kickoff)
	}
	msg := w.say(thread, "we're done, tell product")
	if got := w.waitReply(thread, msg); got != "Reported to the product channel." {
		t.Errorf("reply = %q", got)
	}
	w.dc.WaitFor(t, func() bool { return len(w.botMessages(product)) == 1 }, "the report in #random")
	rep := w.botMessages(product)[0]
	for _, want := range []string{"Build the API", "https://discord.com/channels/" + w.dc.GuildID() + "/" + thread, "The API is ready."} {
		if !strings.Contains(rep.Content, want) {
			t.Errorf("report lacks %q:\n%s", want, rep.Content)
		}
	}
	if am := rep.AllowedMentions; am == nil || len(am.Parse) != 0 || am.RepliedUser {
		t.Errorf("report allowed mentions = %+v, want none", am)
	}
	if !hasSignal(w.signals(thread), "REPORT", `"delivery":"posted"`) {
		t.Error("no REPORT signal")
	}
	if text := embedText(w.command(thread, w.dc.UserID(), 0, "team")); !strings.Contains(text, "Reports to <#"+product+">") {
		t.Errorf("/team does not show where the team reports:\n%s", text)
	}
}

func TestReportIntoAnActiveTeam(t *testing.T) {
	t.Parallel()
	var injected llmtest.Request
	var mu sync.Mutex
	w := setup(t, llmtest.Switch(
		llmtest.Match("on this goal:\nDev work", llmtest.Seq(llmtest.Calls(reportBack("RAW-REPORT: endpoint shipped"), reply("Reported.")))),
		llmtest.Match("on this goal:\nProduct launch", llmtest.SeqFunc(func(r llmtest.Request) llmtest.Reply {
			mu.Lock()
			injected = r
			mu.Unlock()
			return reply("Dev says the endpoint shipped; we can launch.")
		}))))
	product := w.team("Product launch")
	dev := w.teamReporting("Dev work", product)
	w.waitReply(dev, w.say(dev, "ship it and tell product"))
	w.dc.WaitFor(t, func() bool {
		for _, m := range w.botMessages(product) {
			if strings.Contains(m.Content, "we can launch") {
				return true
			}
		}
		return false
	}, "the product team's answer to the report")
	mu.Lock()
	if !strings.Contains(injected.LastUser(), "RAW-REPORT: endpoint shipped") || !strings.Contains(injected.LastUser(), "from another team") {
		t.Errorf("the product master's input is not the marked report:\n%s", injected.LastUser())
	}
	mu.Unlock()
	for _, m := range w.botMessages(product) {
		if strings.Contains(m.Content, "RAW-REPORT") {
			t.Errorf("the raw report was posted in the product thread: %q", m.Content)
		}
	}
	if n := len(w.ai.Requests()); n != 2 {
		t.Errorf("got %d model calls, want 2 (one turn per team)", n)
	}
	if !hasSignal(w.signals(product), "REPORT", `"delivery":"injected"`) {
		t.Error("no REPORT signal on the receiving team")
	}
}

// bindTeam runs /callon inside an existing thread, reporting to reportTo.
func (w *world) bindTeam(thread, goal, reportTo string) {
	w.t.Helper()
	r := w.command(thread, w.dc.UserID(), 0, "callon", discordtest.StringOption("goal", goal), discordtest.ChannelOption("report_to", reportTo))
	if !strings.Contains(r.Content, "is ready in") {
		w.t.Fatalf("/callon in a thread: %q", r.Content)
	}
}

func TestPingPongGuardAndReportCap(t *testing.T) {
	t.Parallel()
	var refusals []string
	var mu sync.Mutex
	record := func(r llmtest.Request) {
		mu.Lock()
		defer mu.Unlock()
		refusals = append(refusals, toolResults(r))
	}
	// Teams A and B report to each other's threads.
	w := setup(t, llmtest.Switch(
		llmtest.Match("on this goal:\nTeam A", llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply { return reportBack("first from A") },
			func(llmtest.Request) llmtest.Reply { return reportBack("second from A") },
			func(r llmtest.Request) llmtest.Reply { record(r); return reply("A is done") })),
		llmtest.Match("on this goal:\nTeam B", llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply { return reportBack("echo to A") },
			func(r llmtest.Request) llmtest.Reply { record(r); return reply("B noted it") }))),
		"CALLON_REPORT_CAP", "1")
	general := w.dc.ChannelID("general")
	ta := w.dc.AddThread(general, "a", discordgo.ChannelTypeGuildPublicThread).ID
	tb := w.dc.AddThread(general, "b", discordgo.ChannelTypeGuildPublicThread).ID
	w.bindTeam(ta, "Team A", tb)
	w.bindTeam(tb, "Team B", ta)
	w.waitReply(ta, w.say(ta, "report to B twice"))
	w.dc.WaitFor(t, func() bool {
		for _, m := range w.botMessages(tb) {
			if m.Content == "B noted it" {
				return true
			}
		}
		return false
	}, "team B's answer to A's report")
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(refusals, "\n")
	if !strings.Contains(all, "at most 1 reports an hour") {
		t.Errorf("A's second report was not capped:\n%s", all)
	}
	if !strings.Contains(all, "do not report back to it within this turn") {
		t.Errorf("B's echo was not refused:\n%s", all)
	}
	for _, m := range w.botMessages(ta) {
		if strings.Contains(m.Content, "echo to A") {
			t.Error("B's echo reached A")
		}
	}
}

func TestDispatchWakesTheDispatcher(t *testing.T) {
	t.Parallel()
	var wake llmtest.Request
	var mu sync.Mutex
	w := setup(t, llmtest.Switch(
		llmtest.Match("on this goal:\nLaunch", llmtest.SeqFunc(
			func(r llmtest.Request) llmtest.Reply {
				if !r.HasTool("dispatch") {
					return llmtest.Unexpected("dispatch not offered")
				}
				return llmtest.Call("dispatch", map[string]any{"channel": "#random", "goal": "Build the signup endpoint"})
			},
			func(r llmtest.Request) llmtest.Reply {
				if !strings.Contains(toolResults(r), "Started a team in <#") {
					return llmtest.Unexpected("dispatch failed: %s", toolResults(r))
				}
				return reply("I asked the team in #random.")
			},
			func(r llmtest.Request) llmtest.Reply {
				mu.Lock()
				wake = r
				mu.Unlock()
				return reply("Dev finished the endpoint.")
			})),
		llmtest.Match("on this goal:\nBuild the signup endpoint", llmtest.SeqFunc(
			func(r llmtest.Request) llmtest.Reply {
				if r.HasTool("dispatch") {
					return llmtest.Unexpected("a dispatched team was offered dispatch at depth 1")
				}
				return llmtest.Calls(reportBack("ENDPOINT-DONE"), reply("Reported back."))
			}))),
		"CALLON_DISPATCH", "on")
	launch := w.team("Launch")
	msg := w.say(launch, "get dev to build signup")
	if got := w.waitReply(launch, msg); got != "I asked the team in #random." {
		t.Errorf("reply = %q", got)
	}
	random := w.dc.ChannelID("random")
	w.dc.WaitFor(t, func() bool { return len(w.dc.Threads(random)) == 1 }, "a thread in #random")
	dev := w.dc.Threads(random)[0]
	if dev.Type != discordgo.ChannelTypeGuildPublicThread || dev.Name != "Build the signup endpoint" {
		t.Errorf("dispatched thread = %+v", dev)
	}
	w.dc.WaitFor(t, func() bool {
		msgs := w.botMessages(launch)
		return msgs[len(msgs)-1].Content == "Dev finished the endpoint."
	}, "the dispatcher's answer to the report")
	if kickoff := w.botMessages(dev.ID)[0].Content; !strings.Contains(kickoff, "Dispatched by the team in <#"+launch+">") {
		t.Errorf("dispatched kickoff does not name the dispatcher:\n%s", kickoff)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(wake.LastUser(), "ENDPOINT-DONE") {
		t.Errorf("the dispatcher was woken by %q, want the report", wake.LastUser())
	}
	if text := embedText(w.command(launch, w.dc.UserID(), 0, "team")); !strings.Contains(text, "Dispatched <#"+dev.ID+">") {
		t.Errorf("/team does not show the dispatched team:\n%s", text)
	}
}

func TestDispatchRefusals(t *testing.T) {
	t.Parallel()
	var told []string
	var mu sync.Mutex
	w := setup(t, llmtest.Switch(
		llmtest.Match("on this goal:\nBusy", llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply {
				return llmtest.Calls(
					llmtest.Call("dispatch", map[string]any{"channel": "#nowhere", "goal": "x"}),
					llmtest.Call("dispatch", map[string]any{"channel": "#random", "goal": "first job"}),
					llmtest.Call("dispatch", map[string]any{"channel": "general", "goal": "second job"}))
			},
			func(r llmtest.Request) llmtest.Reply {
				mu.Lock()
				told = append(told, toolResults(r))
				mu.Unlock()
				return reply("dispatched what I could")
			})),
		// The dispatched team may not dispatch again (depth 1).
		llmtest.Match("on this goal:\nfirst job", llmtest.SeqFunc(func(r llmtest.Request) llmtest.Reply {
			if r.HasTool("dispatch") {
				return llmtest.Unexpected("a dispatched team was offered dispatch")
			}
			return reply("on it")
		}))),
		"CALLON_DISPATCH", "on", "CALLON_MAX_ACTIVE_SESSIONS", "2")
	busy := w.team("Busy")
	w.waitReply(busy, w.say(busy, "dispatch things"))
	mu.Lock()
	defer mu.Unlock()
	all := strings.Join(told, "\n")
	for _, want := range []string{`no channel "#nowhere"`, "Started a team in <#", "already has 2 active teams"} {
		if !strings.Contains(all, want) {
			t.Errorf("the master was not told %q:\n%s", want, all)
		}
	}
	if n := len(w.dc.Threads(w.dc.ChannelID("random"))); n != 1 {
		t.Errorf("got %d dispatched threads in #random, want 1", n)
	}
}

func TestReportToAChannelTheBotCannotPostIn(t *testing.T) {
	t.Parallel()
	w := setup(t, nil)
	random := w.dc.ChannelID("random")
	w.dc.SetChannelPermissionsDenied(random)
	r := w.command(w.dc.ChannelID("general"), w.dc.UserID(), 0, "callon", discordtest.StringOption("goal", "x"), discordtest.ChannelOption("report_to", random))
	if !r.Ephemeral || !strings.Contains(r.Content, "I can't post in <#"+random+">") {
		t.Errorf("/callon report_to a closed channel: %+v, want an ephemeral refusal", r)
	}
	if n := len(w.dc.Threads(w.dc.ChannelID("general"))); n != 0 {
		t.Errorf("a refused /callon opened %d threads", n)
	}
}

func TestReportSurvivesARestartAndLandsOnce(t *testing.T) {
	t.Parallel()
	// The master answers a message the same way however often it runs: a
	// turn run again after the restart must not report twice.
	w := setup(t, llmtest.Switch(llmtest.Match("on this goal:\nRestart", func(r llmtest.Request) llmtest.Reply {
		if strings.HasSuffix(r.LastUser(), "report now") {
			return llmtest.Calls(reportBack("SURVIVOR"), reply("sent"))
		}
		return reply("nothing more")
	})))
	random := w.dc.ChannelID("random")
	thread := w.teamReporting("Restart", random)
	// Discord fails every post until the process is restarted.
	w.dc.Fail(discordtest.RouteCreateMessage, 1000, 500)
	w.say(thread, "report now")
	w.dc.WaitFor(t, func() bool { return w.dc.Calls(discordtest.RouteCreateMessage) >= 2 }, "failed delivery attempts")
	w.restart()
	w.dc.ClearFaults(discordtest.RouteCreateMessage)
	w.dc.WaitFor(t, func() bool { return len(w.botMessages(random)) >= 1 }, "the report after the restart")
	w.waitReply(thread, w.say(thread, "anything else?"))
	count := 0
	for _, m := range w.botMessages(random) {
		if strings.Contains(m.Content, "SURVIVOR") {
			count++
		}
	}
	reports := 0
	for _, s := range w.signals(thread) {
		if strings.HasPrefix(s, "REPORT ") {
			reports++
		}
	}
	if count != 1 || reports != 1 {
		t.Errorf("the report landed %d times (%d REPORT signals), want exactly once", count, reports)
	}
}

func TestReportToATeamThatEndedMeanwhile(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free)
	w := setup(t, llmtest.Switch(
		llmtest.Match("on this goal:\nSender", llmtest.Seq(llmtest.Calls(reportBack("LATE-NEWS"), reply("sent")))),
		// The receiving team is busy on a first message when the report comes.
		llmtest.Match("on this goal:\nReceiver", llmtest.SeqFunc(func(llmtest.Request) llmtest.Reply { <-release; return reply("busy answer") }))))
	receiver := w.team("Receiver")
	sender := w.teamReporting("Sender", receiver)
	w.say(receiver, "keep busy")
	w.dc.WaitFor(t, func() bool { return len(w.ai.Requests()) == 1 }, "the receiver to be busy")
	w.waitReply(sender, w.say(sender, "report"))
	// The report waits like a message; then the receiving team is dissolved.
	if r := w.dissolve(receiver, w.dc.UserID(), 0); !strings.Contains(r, "dissolved") {
		t.Fatalf("/dissolve: %+v", r)
	}
	free()
	w.dc.WaitFor(t, func() bool {
		for _, m := range w.botMessages(receiver) {
			if strings.Contains(m.Content, "LATE-NEWS") {
				return true
			}
		}
		return false
	}, "the report posted as a plain message in the ended team's thread")
}

func TestDissolveSendsAFinalReportOnce(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match("on this goal:\nQuiet team", llmtest.Seq(reply("LAST-ANSWER: the migration is safe.")))))
	random := w.dc.ChannelID("random")
	thread := w.teamReporting("Quiet team", random)
	w.waitReply(thread, w.say(thread, "is the migration safe?"))
	if r := w.dissolve(thread, w.dc.UserID(), 0); !strings.Contains(r, "dissolved") {
		t.Fatalf("/dissolve: %+v", r)
	}
	w.dc.WaitFor(t, func() bool { return len(w.botMessages(random)) == 1 }, "the final report")
	if got := w.botMessages(random)[0].Content; !strings.Contains(got, "Final report") || !strings.Contains(got, "LAST-ANSWER") {
		t.Errorf("final report = %q, want the last answer", got)
	}
}
