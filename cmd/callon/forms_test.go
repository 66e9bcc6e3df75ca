package main

import (
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

// /roles set without a prompt opens a form with a multi-line prompt; its
// submission is checked and saved like the command.
func TestRolesSetForm(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(delegate(task{Role: "poet", Instruction: "a haiku"}), reply("Here."))),
		llmtest.Match("You are the poet", llmtest.Seq(report("old pond")))))
	general := w.dc.ChannelID("general")
	open := func() *discordtest.Interaction {
		return w.dc.SlashCommand(t, discordtest.SlashCommand{Name: "roles", ChannelID: general, Permissions: admin,
			Options: []discordtest.CommandOption{discordtest.Subcommand("set", discordtest.StringOption("name", "poet"),
				discordtest.NumberOption("temperature", 0.9))}})
	}
	ix := open()
	modal := ix.WaitModal(t)
	if len(modal.Inputs) != 4 || modal.Inputs[1].CustomID != "prompt" || modal.Inputs[3].CustomID != "tools" || modal.Inputs[1].Style != discordgo.TextInputParagraph {
		t.Fatalf("form = %+v, want description, a paragraph prompt, model and tools", modal)
	}
	// A description on two lines is refused like the command's.
	bad := w.dc.SubmitModal(t, ix, map[string]string{"description": "Writes\npoems", "prompt": "You write haiku."})
	w.dc.WaitFor(t, func() bool {
		m, ok := bad.Original()
		return ok && strings.Contains(m.Content, "must be one line")
	}, "the form refused")
	ix = open()
	ix.WaitModal(t)
	prompt := "You write haiku.\nFive, seven, five syllables.\nNature, seasons, stillness."
	ok := w.dc.SubmitModal(t, ix, map[string]string{"description": "Writes short poems", "prompt": prompt})
	w.dc.WaitFor(t, func() bool {
		m, found := ok.Original()
		return found && strings.Contains(m.Content, "**poet** added to")
	}, "the role saved")
	_, thread := w.callon(general, "Poetry")
	msg := w.say(thread, "a haiku please")
	w.waitReply(thread, msg)
	recs := workerRequests(w.ai.Requests(), "poet")
	if len(recs) != 1 || !strings.Contains(recs[0].Request.System(), prompt) || recs[0].Request.Temperature == nil || *recs[0].Request.Temperature != 0.9 {
		t.Errorf("the poet ran without the form's prompt or the command's temperature: %+v", recs)
	}
}

// Only the member who ran /dissolve can confirm it; Cancel keeps the team.
func TestDissolveConfirmation(t *testing.T) {
	t.Parallel()
	w := setup(t, nil)
	thread := w.team("Keep me")
	ix := w.dc.SlashCommand(t, discordtest.SlashCommand{Name: "dissolve", ChannelID: thread})
	var confirm discordtest.Message
	w.dc.WaitFor(t, func() bool {
		m, ok := ix.Original()
		confirm = m
		return ok && len(m.Buttons()) == 2
	}, "the confirmation")
	var yes, no string
	for _, b := range confirm.Buttons() {
		switch {
		case strings.HasPrefix(b.CustomID, "dissolve:"):
			yes = b.CustomID
		case strings.HasPrefix(b.CustomID, "dissolve-cancel:"):
			no = b.CustomID
		}
	}
	if yes == "" || no == "" {
		t.Fatalf("buttons = %+v, want Dissolve and Cancel", confirm.Buttons())
	}
	// Only its member can click it: the confirmation is ephemeral (and
	// callon checks the clicker against the id in the button as well).
	if !confirm.Ephemeral {
		t.Error("the confirmation is visible to others")
	}
	w.dc.ClickButton(t, discordtest.ClickButton{MessageID: confirm.ID, CustomID: no})
	w.dc.WaitFor(t, func() bool {
		m, _ := ix.Original()
		return strings.Contains(m.Content, "Not dissolved") && len(m.Buttons()) == 0
	}, "the cancelled confirmation")
	// The team still answers.
	if _, err := w.db().ActiveSession(t.Context(), thread); err != nil {
		t.Errorf("the team ended after Cancel: %v", err)
	}
}
