package bot

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

var dissolveCommand = command{
	def: &discordgo.ApplicationCommand{
		Name:        "dissolve",
		Description: "End this thread's team session (asks you to confirm)",
		Contexts:    guildOnly,
	},
	handle: (*Bot).handleDissolve,
}

// confirmFor is how long a /dissolve confirmation can be clicked.
const confirmFor = 2 * time.Minute

// handleDissolve asks the member to confirm: a Dissolve button that only
// they can click, for a while, and a Cancel button.
func (b *Bot) handleDissolve(i *discordgo.InteractionCreate) {
	if err := b.deferEphemeral(i); err != nil {
		b.log.Warn("acknowledge /dissolve", "err", err)
		return
	}
	b.goWork(30*time.Second, func(ctx context.Context) {
		s, err := b.cmds.Session(ctx, i.ChannelID)
		if err == nil && !(master.Actor{UserID: i.Member.User.ID, Permissions: i.Member.Permissions}).MayManage(s) {
			err = master.Errorf(master.ENotAllowed, "Only the person who started this team, or members who can manage threads, can dissolve it.")
		}
		if err != nil {
			b.editResponse(ctx, i, b.errorText(i, err))
			return
		}
		text := fmt.Sprintf("Dissolve the team working on **%s**? Its work stops, a summary is posted and the thread is archived. (This asks for %s.)",
			master.Truncate(s.Goal, 200), master.Elapsed(confirmFor))
		id := fmt.Sprintf("%d:%s:%d", s.ID, i.Member.User.ID, time.Now().Unix())
		components := []discordgo.MessageComponent{discordgo.ActionsRow{Components: []discordgo.MessageComponent{
			discordgo.Button{Label: "Dissolve the team", Style: discordgo.DangerButton, CustomID: dissolveConfirm.prefix + id},
			discordgo.Button{Label: "Cancel", Style: discordgo.SecondaryButton, CustomID: dissolveCancel.prefix + id},
		}}}
		ctx, cancel := answering(ctx)
		defer cancel()
		if _, err := b.s.InteractionResponseEdit(i.Interaction, &discordgo.WebhookEdit{Content: &text, Components: &components,
			AllowedMentions: noMentions()}, discordgo.WithContext(ctx)); err != nil {
			b.log.Warn("ask to confirm /dissolve", "err", err)
		}
	})
}

var (
	dissolveConfirm = form{prefix: "dissolve:", handle: (*Bot).confirmDissolve}
	dissolveCancel  = form{prefix: "dissolve-cancel:", handle: (*Bot).cancelDissolve}
)

// parseConfirm reads a confirmation's session, the member who asked, and
// when.
func parseConfirm(id string) (session int64, user string, at time.Time, ok bool) {
	parts := strings.Split(id, ":")
	if len(parts) != 3 {
		return 0, "", time.Time{}, false
	}
	session, err1 := strconv.ParseInt(parts[0], 10, 64)
	unix, err2 := strconv.ParseInt(parts[2], 10, 64)
	return session, parts[1], time.Unix(unix, 0), err1 == nil && err2 == nil
}

// settle replaces a confirmation message's text and removes its buttons.
func (b *Bot) settle(i *discordgo.InteractionCreate, text string) {
	ctx, cancel := context.WithTimeout(b.work, 3*time.Second)
	defer cancel()
	none := []discordgo.MessageComponent{}
	if err := b.s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: text, Components: none, AllowedMentions: noMentions()},
	}, discordgo.WithContext(ctx)); err != nil {
		b.log.Warn("update a confirmation", "err", err)
	}
}

func (b *Bot) confirmDissolve(i *discordgo.InteractionCreate, id string) {
	sessionID, user, at, ok := parseConfirm(id)
	switch {
	case !ok:
		b.settle(i, "This confirmation is not one callon can read; run /dissolve again.")
		return
	case i.Member.User.ID != user:
		b.respondEphemeral(i, "Only the member who ran /dissolve can confirm it.")
		return
	case time.Since(at) > confirmFor:
		b.settle(i, "This confirmation has expired; run /dissolve again if you still want to end the team.")
		return
	}
	ctx, cancel := context.WithTimeout(b.work, 3*time.Second)
	err := b.s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate},
		discordgo.WithContext(ctx))
	cancel()
	if err != nil {
		b.log.Warn("acknowledge a /dissolve confirmation", "err", err)
		return
	}
	b.goWork(30*time.Second, func(ctx context.Context) {
		text := "The team is dissolved: its work is stopped, a summary is posted and the thread archived."
		s, err := b.cmds.Session(ctx, i.ChannelID)
		if err == nil && s.ID != sessionID {
			err = master.Errorf(master.EConflict, "The team you asked to dissolve has already ended.")
		}
		if err == nil {
			err = b.cmds.Dissolve(ctx, s, master.Actor{UserID: i.Member.User.ID, Permissions: i.Member.Permissions})
		}
		if err != nil {
			text = b.errorText(i, err)
		}
		ctx, cancel := answering(ctx)
		defer cancel()
		none := []discordgo.MessageComponent{}
		if _, err := b.s.InteractionResponseEdit(i.Interaction, &discordgo.WebhookEdit{Content: &text, Components: &none,
			AllowedMentions: noMentions()}, discordgo.WithContext(ctx)); err != nil {
			b.log.Warn("report /dissolve", "err", err)
		}
	})
}

func (b *Bot) cancelDissolve(i *discordgo.InteractionCreate, id string) {
	if _, user, _, ok := parseConfirm(id); ok && i.Member.User.ID != user {
		b.respondEphemeral(i, "Only the member who ran /dissolve can cancel it.")
		return
	}
	b.settle(i, "Not dissolved: the team carries on.")
}
