package main

import (
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
	"github.com/callonbot/callon/master"
)

// exchangeReply is the master's reply with members' parts.
func exchangeReply(text string, parts ...[2]string) llmtest.Reply {
	var ex []map[string]string
	for _, p := range parts {
		ex = append(ex, map[string]string{"member": p[0], "text": p[1]})
	}
	return llmtest.Call("reply", map[string]any{"text": text, "exchange": ex})
}

// threadMessages lists the messages of a thread posted after msg, in
// order: the bot's and its webhooks'.
func (w *world) after(thread string, msg discordtest.Message) []discordtest.Message {
	var out []discordtest.Message
	seen := false
	for _, m := range w.dc.Messages(thread) {
		if m.ID == msg.ID {
			seen = true
			continue
		}
		if seen && !m.Deleted && !isStatus(m) {
			out = append(out, m)
		}
	}
	return out
}

// A channel whose admin turns personas on gets teams whose replies come
// as an exchange: the coordinator's text first, replying to the message,
// then each member's part under its name and picture through one webhook
// of the parent channel, in order, once each, pinging nobody; /team names
// the personas.
func TestPersonasPostPartsOnce(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(r llmtest.Request) llmtest.Reply {
				if !strings.Contains(string(r.Tools[0].Parameters), `"exchange"`) {
					return llmtest.Unexpected("reply offers no exchange with personas on: %s", r.Tools[0].Parameters)
				}
				return exchangeReply("Here is the plan.", [2]string{"researcher", "I checked the dates: March 3 works. @everyone"},
					[2]string{"writer", "I drafted the announcement."})
			},
			func(llmtest.Request) llmtest.Reply {
				return exchangeReply("Again.", [2]string{"researcher", "Still March 3."})
			},
			func(llmtest.Request) llmtest.Reply {
				return exchangeReply("Once more.", [2]string{"writer", "After the webhook was deleted."})
			}))))
	general := w.dc.ChannelID("general")
	r := w.command(general, w.dc.UserID(), master.PermManageChannels, "roles",
		discordtest.Subcommand("features", discordtest.StringOption("personas", "on")))
	if !strings.Contains(r.Content, "personas **on** (this channel)") {
		t.Fatalf("/roles features: %q", r.Content)
	}
	thread := w.team("Launch")
	msg := w.say(thread, "Plan the launch")
	w.dc.WaitFor(t, func() bool { return len(w.after(thread, msg)) >= 3 }, "the reply's three parts")
	parts := w.after(thread, msg)
	if len(parts) != 3 {
		t.Fatalf("got %d messages after the user's, want 3", len(parts))
	}
	first, res, wri := parts[0], parts[1], parts[2]
	if first.AuthorID != w.dc.BotUserID() || first.Content != "Here is the plan." || first.Reference == nil || first.Reference.MessageID != msg.ID {
		t.Errorf("first part = %+v, want the coordinator's text replying to the message", first)
	}
	hooks := w.dc.Webhooks(general)
	if len(hooks) != 1 || !hooks[0].ByApp {
		t.Fatalf("webhooks of #general = %+v, want one of callon's", hooks)
	}
	for _, c := range []struct {
		m          discordtest.Message
		name, text string
	}{{res, "Researcher", "I checked the dates: March 3 works. @everyone"}, {wri, "Writer", "I drafted the announcement."}} {
		if c.m.WebhookID != hooks[0].ID || c.m.AuthorName != c.name || c.m.Content != c.text {
			t.Errorf("part = %q by %q (webhook %q), want %q by %q through #general's webhook", c.m.Content, c.m.AuthorName, c.m.WebhookID, c.text, c.name)
		}
		role := strings.ToLower(c.name)
		if want := (bot.Avatars{}).URL(&master.Persona{Role: role}); c.m.AvatarURL != want || !strings.HasPrefix(want, "https://cdn.discordapp.com/embed/avatars/") {
			t.Errorf("avatar = %q, want %q: Discord's default avatar of the role", c.m.AvatarURL, want)
		}
		if am := c.m.AllowedMentions; am == nil || len(am.Parse) != 0 || len(am.Users) != 0 {
			t.Errorf("allowed_mentions = %+v, want parse: []", am)
		}
	}
	// A second turn reuses the webhook, after a failed execution (its
	// error logged without the webhook's token).
	w.dc.Fail(discordtest.RouteExecuteWebhook, 1, 500)
	again := w.say(thread, "Check again")
	w.dc.WaitFor(t, func() bool { return len(w.after(thread, again)) >= 2 }, "the second reply")
	if n := len(w.dc.Webhooks(general)); n != 1 {
		t.Errorf("got %d webhooks after two turns, want the one reused", n)
	}
	if n := w.dc.Calls(discordtest.RouteCreateWebhook); n != 1 {
		t.Errorf("created webhooks %d times, want once", n)
	}
	if w.logged(hooks[0].Token) || !w.logged("send message; retrying") {
		t.Error("the failed execution was not logged, or its log carries the webhook's token")
	}
	// An admin deletes the webhook: the next part makes a new one.
	w.dc.DeleteWebhook(hooks[0].ID)
	third := w.say(thread, "And now?")
	w.dc.WaitFor(t, func() bool { return len(w.after(thread, third)) >= 2 }, "the third reply")
	if hs := w.dc.Webhooks(general); len(hs) != 1 || hs[0].ID == hooks[0].ID {
		t.Errorf("webhooks after the deletion = %+v, want a new one", hs)
	}
	if last := w.after(thread, third)[1]; last.Content != "After the webhook was deleted." || last.AuthorName != "Writer" {
		t.Errorf("the part after the deletion = %q by %q", last.Content, last.AuthorName)
	}
	if got := embedText(w.command(thread, w.dc.UserID(), 0, "team")); !strings.Contains(got, "**Researcher**, **Planner**") {
		t.Errorf("/team does not name the personas:\n%s", got)
	}
	// The team's own messages never start a turn: three turns, three master calls.
	if n := len(w.requestsFor(masterPrompt)); n != 3 {
		t.Errorf("the master was called %d times, want 3", n)
	}
}

// A process killed while a member's part is being posted (the webhook's
// message posted, its answer not yet back) leaves the part's row pending:
// the process that takes over finds the message in the thread instead of
// posting it again, and posts the parts after it. Every part once, in
// order.
func TestPersonaPartsSurviveAKill(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	held, release := dc.HoldWebhook("Part two.")
	t.Cleanup(release)
	w := newWorld(t, dc, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(
		exchangeReply("Part one.", [2]string{"researcher", "Part two."}, [2]string{"writer", "Part three."})))),
		"CALLON_ROLES_FILE", writeRolesFile(t, "personas: on\n"))
	kill := w.spawn()
	w.dc.WaitConnected(t)
	w.dc.WaitFor(t, func() bool { return len(w.dc.Commands("")) == commandCount }, "the commands registered")
	thread := w.team("Crash between parts")
	msg := w.say(thread, "go")
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the first process never posted part two")
	}
	w.start()
	kill()
	release()
	w.dc.WaitFor(t, func() bool {
		parts := w.after(thread, msg)
		return len(parts) >= 3 && parts[len(parts)-1].Content == "Part three."
	}, "the last part")
	var got []string
	for _, m := range w.after(thread, msg) {
		got = append(got, m.Content)
	}
	if strings.Join(got, "|") != "Part one.|Part two.|Part three." {
		t.Errorf("thread after the message: %q, want each part once, in order", got)
	}
	if n := w.count(`SELECT count(*) FROM outbox WHERE persona IS NOT NULL AND state = 'sent'`); n != 2 {
		t.Errorf("%d members' parts recorded sent, want 2", n)
	}
	if !w.logged("message was posted before; recording it") {
		t.Error("the process that took over did not find part two in the thread")
	}
	if n := len(w.dc.Webhooks(w.dc.ChannelID("general"))); n != 1 {
		t.Errorf("got %d webhooks, want the first process's reused", n)
	}
}

// Without Manage Webhooks in the channel, the team says so once and its
// members' parts are posted in callon's own voice, named.
func TestPersonasWithoutManageWebhooks(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	w := setupWith(t, dc, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(
		exchangeReply("One.", [2]string{"researcher", "Found it."}),
		exchangeReply("Two.", [2]string{"writer", "Wrote it."})))),
		"CALLON_ROLES_FILE", writeRolesFile(t, "personas: on\n"))
	dc.DenyWebhooks(dc.ChannelID("general"))
	thread := w.team("No webhooks")
	first := w.say(thread, "one")
	w.dc.WaitFor(t, func() bool { return len(w.after(thread, first)) >= 3 }, "the reply and the notice")
	second := w.say(thread, "two")
	w.dc.WaitFor(t, func() bool { return len(w.after(thread, second)) >= 2 }, "the second reply")
	var notices int
	for _, m := range w.botMessages(thread) {
		if m.WebhookID != "" {
			t.Errorf("a message went through a webhook: %q", m.Content)
		}
		if strings.Contains(m.Content, "Manage Webhooks") {
			notices++
		}
	}
	if notices != 1 {
		t.Errorf("got %d notices about Manage Webhooks, want 1", notices)
	}
	var texts []string
	for _, m := range w.botMessages(thread) {
		texts = append(texts, m.Content)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"**Researcher:** Found it.", "**Writer:** Wrote it."} {
		if !strings.Contains(all, want) {
			t.Errorf("the thread lacks %q:\n%s", want, all)
		}
	}
	if n := w.dc.Calls(discordtest.RouteListChannelWebhooks); n != 1 {
		t.Errorf("asked Discord for the channel's webhooks %d times, want once (the refusal is remembered)", n)
	}
}
