package bot

import (
	"context"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/master"
)

// The Approve and Deny buttons of a request for a person's approval of a
// call of a tool: the store posts the request through the outbox, with
// custom_ids made by master.ApprovalButtons.
var (
	approveButton = form{prefix: master.ApprovePrefix, handle: func(b *Bot, i *discordgo.InteractionCreate, id string) { b.decide(i, id, true) }}
	denyButton    = form{prefix: master.DenyPrefix, handle: func(b *Bot, i *discordgo.InteractionCreate, id string) { b.decide(i, id, false) }}
)

// decide records a click on Approve or Deny. The click is acknowledged
// at once (a deferred update); then the decision is recorded, and the
// request's message is edited to show it, its buttons removed. A member
// who may not decide gets an ephemeral refusal and the message stays.
func (b *Bot) decide(i *discordgo.InteractionCreate, raw string, approve bool) {
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		b.settle(i, "This request is not one callon can read.")
		return
	}
	ctx, cancel := context.WithTimeout(b.work, 3*time.Second)
	err = b.s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate},
		discordgo.WithContext(ctx))
	cancel()
	if err != nil {
		b.log.Warn("acknowledge an approval", "approval_id", id, "err", err)
		return
	}
	b.goWork(30*time.Second, func(ctx context.Context) {
		actor := master.Actor{UserID: i.Member.User.ID, Permissions: i.Member.Permissions, Roles: i.Member.Roles}
		a, err := b.approvals.Decide(ctx, id, approve, actor)
		ctx, cancel := answering(ctx)
		defer cancel()
		if err != nil {
			if _, ferr := b.s.FollowupMessageCreate(i.Interaction, false, &discordgo.WebhookParams{Content: b.errorText(i, err),
				Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions()}, discordgo.WithContext(ctx)); ferr != nil {
				b.log.Warn("refuse an approval", "approval_id", id, "err", ferr)
			}
			return
		}
		if a.State == master.ApprovalExpired {
			// Too late: the click changed nothing; say so to the clicker.
			if _, ferr := b.s.FollowupMessageCreate(i.Interaction, false, &discordgo.WebhookParams{
				Content: "This request had expired: nothing was approved, and the call is not made.",
				Flags:   discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions()}, discordgo.WithContext(ctx)); ferr != nil {
				b.log.Warn("tell a late click", "approval_id", id, "err", ferr)
			}
		}
		text := render.Approval(a)
		none := []discordgo.MessageComponent{}
		if _, err := b.s.InteractionResponseEdit(i.Interaction, &discordgo.WebhookEdit{Content: &text, Components: &none,
			AllowedMentions: noMentions()}, discordgo.WithContext(ctx)); err != nil {
			// Not lost: the approvals loop edits it later.
			b.log.Warn("show an approval's decision", "approval_id", id, "err", err)
			return
		}
		if err := b.approvals.Settled(ctx, id); err != nil {
			b.log.Warn("record an approval's message settled", "approval_id", id, "err", err)
		}
	})
}
