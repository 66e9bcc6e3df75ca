package main

import (
	"strings"
	"testing"

	"github.com/callonbot/callon/bot/discordtest"
)

// What callon acknowledged in the instant before SIGTERM still takes
// effect, exactly once: the stop comes while Discord is answering the
// acknowledgement of a /dissolve confirmation, then of a /roles set form,
// so the work behind each starts after the process was told to stop.
func TestAcknowledgedWorkSurvivesShutdown(t *testing.T) {
	t.Parallel()
	w := setup(t, nil)
	thread := w.team("Stop me")
	ix := w.dc.SlashCommand(t, discordtest.SlashCommand{Name: "dissolve", ChannelID: thread})
	var confirm discordtest.Message
	w.dc.WaitFor(t, func() bool {
		m, ok := ix.Original()
		confirm = m
		return ok && len(m.Buttons()) == 2
	}, "the /dissolve confirmation")
	var yes string
	for _, b := range confirm.Buttons() {
		if strings.HasPrefix(b.CustomID, "dissolve:") {
			yes = b.CustomID
		}
	}
	w.dc.OnAck(func(ix *discordtest.Interaction) {
		if strings.HasPrefix(ix.CustomID(), "dissolve:") {
			w.sigterm()
		}
	})
	click := w.dc.ClickButton(t, discordtest.ClickButton{MessageID: confirm.ID, CustomID: yes, ChannelID: thread})
	w.dc.WaitFor(t, click.Acked, "the click acknowledged")
	w.stop()
	if n := w.count(`SELECT count(*) FROM sessions WHERE thread_id = $1 AND state = 'dissolved'`, thread); n != 1 {
		t.Errorf("after the stop, %d dissolved teams in the thread, want 1: the confirmed dissolve was lost", n)
	}

	w.dc.OnAck(nil)
	w.start()
	general := w.dc.ChannelID("general")
	form := w.dc.SlashCommand(t, discordtest.SlashCommand{Name: "roles", ChannelID: general, Permissions: admin,
		Options: []discordtest.CommandOption{discordtest.Subcommand("set", discordtest.StringOption("name", "poet"))}})
	form.WaitModal(t)
	w.dc.OnAck(func(ix *discordtest.Interaction) {
		if ix.CustomID() != "" {
			w.sigterm()
		}
	})
	submit := w.dc.SubmitModal(t, form, map[string]string{"description": "Writes short poems", "prompt": "You write haiku."})
	w.dc.WaitFor(t, submit.Acked, "the form acknowledged")
	w.stop()
	if n := w.count(`SELECT count(*) FROM channel_roles WHERE name = 'poet'`); n != 1 {
		t.Errorf("after the stop, %d roles named poet, want 1: the submitted form was lost", n)
	}

	// The next process posts the closing summary, once; nothing is done twice.
	w.dc.OnAck(nil)
	w.start()
	w.dc.WaitFor(t, func() bool {
		for _, m := range w.botMessages(thread) {
			if strings.HasPrefix(m.Content, "👋 **Team dissolved**") {
				return true
			}
		}
		return false
	}, "the closing summary")
	summaries := 0
	for _, m := range w.botMessages(thread) {
		if strings.HasPrefix(m.Content, "👋 **Team dissolved**") {
			summaries++
		}
	}
	if summaries != 1 {
		t.Errorf("%d closing summaries, want 1", summaries)
	}
	if n := w.count(`SELECT count(*) FROM role_changes WHERE 'poet' = ANY (names)`); n != 1 {
		t.Errorf("%d changes of the role poet recorded, want 1", n)
	}
}
