package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

// count runs a query that returns one number on the world's database.
func (w *world) count(sql string, args ...any) int {
	w.t.Helper()
	if w.pool == nil {
		pool, err := pgxpool.New(context.Background(), w.dbURL)
		if err != nil {
			w.t.Fatal(err)
		}
		w.pool = pool
		w.t.Cleanup(pool.Close)
	}
	var n int
	if err := w.pool.QueryRow(w.t.Context(), sql, args...).Scan(&n); err != nil {
		w.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// masterCalls counts the coordinator's model calls so far.
func (w *world) masterCalls() int {
	n := 0
	for _, r := range w.ai.Requests() {
		if strings.Contains(r.Request.System(), masterPrompt) {
			n++
		}
	}
	return n
}

// bobWith adds a member "bob" with a role of the given guild-level
// permissions (none: no role).
func (w *world) bobWith(perms int64) string {
	w.t.Helper()
	bob := w.dc.AddUser("bob")
	if perms != 0 {
		w.dc.SetMemberRoles(w.dc.GuildID(), bob, w.dc.AddRole(w.dc.GuildID(), "bob's role", perms))
	}
	return bob
}

// With CALLON_MAX_ACTIVE_SESSIONS at 1, /callon is refused at the cap,
// even three at once, with a private answer naming the limit and how to
// free a slot; /dissolve frees it. A person has a cap of their own.
func TestCallonRefusedAtTheCaps(t *testing.T) {
	t.Parallel()
	w := setup(t, nil, "CALLON_MAX_ACTIVE_SESSIONS", "1")
	general := w.dc.ChannelID("general")
	var ixs []*discordtest.Interaction
	for i := range 3 {
		ixs = append(ixs, w.dc.SlashCommand(t, discordtest.SlashCommand{Name: "callon", ChannelID: general,
			Options: []discordtest.CommandOption{discordtest.StringOption("goal", fmt.Sprint("race ", i))}}))
	}
	ready, refused := 0, 0
	for _, ix := range ixs {
		w.dc.WaitFor(t, func() bool { m, ok := ix.Original(); return ok && m.Content != "" }, "an answer to /callon")
		m, _ := ix.Original()
		switch {
		case strings.Contains(m.Content, "is ready in"):
			ready++
		case strings.Contains(m.Content, "already has 1 active teams") && strings.Contains(m.Content, "`/dissolve`") && m.Ephemeral:
			refused++
		default:
			t.Errorf("/callon answered %q", m.Content)
		}
	}
	if ready != 1 || refused != 2 || w.count(`SELECT count(*) FROM sessions WHERE state = 'active'`) != 1 {
		t.Fatalf("%d teams started and %d refused, want 1 and 2", ready, refused)
	}
	for _, th := range w.dc.Threads(general) {
		if !th.Archived && w.count(`SELECT count(*) FROM sessions WHERE thread_id = $1`, th.ID) == 0 {
			t.Errorf("thread %s of a refused /callon is left open", th.ID)
		}
	}
	var thread string
	for _, th := range w.dc.Threads(general) {
		if w.count(`SELECT count(*) FROM sessions WHERE thread_id = $1`, th.ID) == 1 {
			thread = th.ID
		}
	}
	got, _ := w.callon(general, "one too many")
	mustContain(t, "/callon at the cap", got, "This server already has 1 active teams, the most allowed", "/dissolve")
	w.dissolve(thread, w.dc.UserID(), 0)
	if got, th := w.callon(general, "after a dissolve"); th == "" {
		t.Errorf("/callon after /dissolve: %q, want a team", got)
	}
}

func TestCallonRefusedAtThePersonalCap(t *testing.T) {
	t.Parallel()
	w := setup(t, nil, "CALLON_MAX_USER_SESSIONS", "1")
	general := w.dc.ChannelID("general")
	if _, th := w.callon(general, "mine"); th == "" {
		t.Fatal("the first team did not start")
	}
	got, th := w.callon(general, "mine too")
	if th != "" || !strings.Contains(got, "You already run 1 active teams, the most one person may") {
		t.Errorf("a second team of the same person: %q", got)
	}
	r := w.command(general, w.dc.AddUser("bob"), 0, "callon", discordtest.StringOption("goal", "bob's"))
	if !strings.Contains(r.Content, "is ready in") {
		t.Errorf("another person's team: %q", r.Content)
	}
}

// Once a team's budget is spent no model is called for it, master,
// worker or /replan: at most the call that crossed the line overshoots,
// and the bot answers itself. An admin raises it live with /budget; /team shows the
// tokens and their cost.
func TestBudgetStopsModelCalls(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(
			delegate(task{Role: "researcher", Instruction: "dig"}).WithUsage(100, 50),
			reply("Back at work.").WithUsage(10, 5))),
		// One call crosses the budget: the worker makes no second one.
		llmtest.Match("You are the researcher", llmtest.Seq(
			llmtest.Call("progress", map[string]any{"percent": 50, "note": "reading"}).WithUsage(900, 100)))),
		"CALLON_MAX_SESSION_TOKENS", "1000", "CALLON_PRICES", "gpt-4o=2.5/10,gpt-4o-mini=0.15/0.6")
	thread := w.team("Budget")
	for _, text := range []string{"dig into it", "and now?", "hello?"} {
		got := w.waitReply(thread, w.say(thread, text))
		mustContain(t, "a reply over budget", got, "This team has used its budget of 1,000 tokens", "`/budget team`")
	}
	mustContain(t, "/replan over budget", w.command(thread, w.dc.UserID(), 0, "replan").Content, "This team has used its budget of 1,000 tokens")
	if n := len(w.ai.Requests()); n != 2 {
		t.Fatalf("got %d model calls, want 2: the master's delegation and the worker's one call", n)
	}
	if !hasSignal(w.signals(thread), "TASK_COMPLETE", "budget") {
		t.Errorf("the researcher's task did not end on the budget: %v", w.signals(thread))
	}
	bob := w.dc.AddUser("bob")
	mustContain(t, "/budget by a member", w.command(thread, bob, discordgo.PermissionManageGuild, "budget",
		discordtest.Subcommand("team", discordtest.IntegerOption("tokens", 5000))).Content, "Manage Server")
	mustContain(t, "/budget team by the owner", w.command(thread, w.dc.UserID(), 0, "budget",
		discordtest.Subcommand("team", discordtest.IntegerOption("tokens", 5000))).Content, "budget is now 5,000 tokens")
	if got := w.waitReply(thread, w.say(thread, "go on")); got != "Back at work." {
		t.Errorf("after raising the budget: %q", got)
	}
	show := w.command(thread, w.dc.UserID(), 0, "budget", discordtest.Subcommand("show")).Content
	mustContain(t, "/budget show", show, "This team**: 1,165 of 5,000 tokens", "set by an admin", "≈ $", "budget of the team in <#"+thread+"> → 5,000 tokens")
	mustContain(t, "/team", embedText(w.command(thread, w.dc.UserID(), 0, "team")), "Tokens used: 1,165", "of a budget of 5,000", "cost ≈ $0.00")
}

// A guild's daily budget stops every team of the guild.
func TestGuildDailyBudget(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(
		reply("first").WithUsage(400, 200), reply("third"))),
	), "CALLON_GUILD_DAILY_TOKENS", "500")
	a, b := w.team("Team A"), w.team("Team B")
	w.waitReply(a, w.say(a, "one"))
	mustContain(t, "another team over the server's budget", w.waitReply(b, w.say(b, "two")),
		"This server has used its daily budget of 500 tokens", "`/budget server`")
	mustContain(t, "/budget server", w.command(b, w.dc.UserID(), 0, "budget", discordtest.Subcommand("server",
		discordtest.IntegerOption("tokens", 0))).Content, "daily budget is now no limit")
	if got := w.waitReply(b, w.say(b, "three")); got != "third" {
		t.Errorf("after lifting the budget: %q", got)
	}
	if n := len(w.ai.Requests()); n != 2 {
		t.Errorf("got %d model calls, want 2", n)
	}
}

// gated answers r once gate is closed (or after 20 s, so a failed test
// does not hang).
func gated(gate <-chan struct{}, r llmtest.Reply) llmtest.Script {
	return func(llmtest.Request) llmtest.Reply {
		select {
		case <-gate:
		case <-time.After(20 * time.Second):
		}
		return r
	}
}

// A flood of 30 messages costs at most the queue's 5 master calls: the
// rest are refused, with one notice, never a reply each.
func TestFloodCostsAtMostTheQueue(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, gated(gate, reply("ok")))), "CALLON_USER_TURNS_PER_MINUTE", "0")
	thread := w.team("Flood")
	for i := range 30 {
		w.say(thread, fmt.Sprintf("spam %d", i))
	}
	w.dc.WaitFor(t, func() bool {
		return w.count(`SELECT count(*) FROM turns u JOIN sessions s ON s.id = u.session_id WHERE s.thread_id = $1`, thread) == 30
	}, "the 30 messages recorded")
	close(gate)
	w.dc.WaitFor(t, func() bool {
		return w.count(`SELECT count(*) FROM turns WHERE state IN ('queued', 'running')`) == 0
	}, "the admitted messages answered")
	w.dc.WaitFor(t, func() bool { return w.count(`SELECT count(*) FROM outbox WHERE state = 'pending'`) == 0 }, "every message posted")
	if n := w.masterCalls(); n != 5 {
		t.Errorf("got %d master calls for 30 messages, want 5 (the queue)", n)
	}
	notices, replies := 0, 0
	for _, m := range w.botMessages(thread) {
		switch {
		case strings.Contains(m.Content, "already has 5 messages to answer"):
			notices++
		case m.Content == "ok":
			replies++
		}
	}
	if notices != 1 || replies != 5 || w.count(`SELECT count(*) FROM turns WHERE state = 'refused'`) != 25 {
		t.Errorf("%d notices and %d replies, want 1 and 5; 25 messages refused", notices, replies)
	}
}

// A person over the rate is refused, once told; others are not.
func TestPerUserRate(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Always(reply("ok")))), "CALLON_USER_TURNS_PER_MINUTE", "2")
	thread := w.team("Rate")
	w.waitReply(thread, w.say(thread, "one"))
	w.waitReply(thread, w.say(thread, "two"))
	w.say(thread, "three")
	w.say(thread, "four")
	bob := w.dc.AddUser("bob")
	if got := w.waitReply(thread, w.dc.UserMessage(thread, bob, "bob here")); got != "ok" {
		t.Errorf("another person's message: %q", got)
	}
	w.dc.WaitFor(t, func() bool {
		for _, m := range w.botMessages(thread) {
			if strings.Contains(m.Content, "at most 2 messages a minute") {
				return true
			}
		}
		return false
	}, "the rate notice")
	if n := w.masterCalls(); n != 3 || w.count(`SELECT count(*) FROM turns WHERE state = 'refused'`) != 2 {
		t.Errorf("got %d master calls, want 3; two messages refused", n)
	}
}

// Messages missed while away are admitted within the thread's queue too.
func TestCatchUpKeepsToTheQueue(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, gated(gate, reply("ok")))))
	thread := w.team("Away")
	w.stop()
	for i := range 8 {
		w.say(thread, fmt.Sprintf("while away %d", i))
	}
	w.start()
	w.dc.WaitFor(t, func() bool {
		for _, m := range w.botMessages(thread) {
			if strings.Contains(m.Content, "missed 8 messages here. I picked up 5;") {
				return true
			}
		}
		return false
	}, "the catch-up notice")
	close(gate)
	w.dc.WaitFor(t, func() bool { return w.count(`SELECT count(*) FROM turns WHERE state IN ('queued', 'running')`) == 0 }, "the answers")
	if n := w.masterCalls(); n != 5 {
		t.Errorf("got %d master calls, want 5", n)
	}
}

// rowsOf counts what a session has in each table retention deletes from.
func (w *world) rowsOf(sessionID int64) string {
	w.t.Helper()
	var parts []string
	for _, table := range []string{"sessions:id", "session_roles:session_id", "session_usage:session_id", "turns:session_id",
		"tasks:session_id", "signals:session_id", "outbox:session_id", "webhook_events:session_id", "reports:from_session"} {
		name, key, _ := strings.Cut(table, ":")
		parts = append(parts, fmt.Sprintf("%s %d", name, w.count(`SELECT count(*) FROM `+name+` WHERE `+key+` = $1`, sessionID)))
	}
	return strings.Join(parts, ", ")
}

// Rows of a team that ended longer ago than CALLON_RETENTION are deleted
// by the background job; an active team's are not touched.
func TestRetentionDeletesEndedTeams(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(delegate(task{Role: "writer", Instruction: "draft"}), reply("old done"), reply("kept"))),
		llmtest.Match("You are the writer", llmtest.Seq(report("a draft")))),
		"CALLON_RETENTION", "2s", "CALLON_WEBHOOK_URL", "http://127.0.0.1:1/hook", "CALLON_WEBHOOK_SECRET", "s", "CALLON_WEBHOOK_RETRIES", "0")
	old := w.team("Old")
	w.waitReply(old, w.say(old, "write it"))
	kept := w.team("Kept")
	w.waitReply(kept, w.say(kept, "hello"))
	oldID := int64(w.count(`SELECT id FROM sessions WHERE thread_id = $1`, old))
	keptID := int64(w.count(`SELECT id FROM sessions WHERE thread_id = $1`, kept))
	if w.count(`SELECT count(*) FROM tasks WHERE session_id = $1`, oldID) != 1 || w.count(`SELECT count(*) FROM signals WHERE session_id = $1`, oldID) == 0 {
		t.Fatalf("the old team has no work to delete: %s", w.rowsOf(oldID))
	}
	w.dissolve(old, w.dc.UserID(), 0)
	w.dc.WaitFor(t, func() bool { return w.count(`SELECT count(*) FROM outbox WHERE state = 'pending'`) == 0 }, "the closing summary posted")
	keptRows := w.rowsOf(keptID)
	w.dc.WaitFor(t, func() bool { return w.count(`SELECT count(*) FROM sessions WHERE id = $1`, oldID) == 0 }, "the ended team purged")
	want := "sessions 0, session_roles 0, session_usage 0, turns 0, tasks 0, signals 0, outbox 0, webhook_events 0, reports 0"
	if got := w.rowsOf(oldID); got != want {
		t.Errorf("the ended team's rows: %s, want none", got)
	}
	if got := w.rowsOf(keptID); got != keptRows {
		t.Errorf("the active team's rows: %s, want them untouched: %s", got, keptRows)
	}
	// The line is written once the purge returns, after its last delete.
	w.dc.WaitFor(t, func() bool { return w.logged("purged ended sessions", "sessions=1") }, "the purge logged")
}
