package bot

import (
	"context"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/master"
)

var teamCommand = command{
	def: &discordgo.ApplicationCommand{
		Name:        "team",
		Description: "Show this thread's team: members, their status and the work in progress",
		Contexts:    guildOnly,
	},
	handle: (*Bot).handleTeam,
}

func (b *Bot) handleTeam(i *discordgo.InteractionCreate) {
	if err := b.deferEphemeral(i); err != nil {
		b.log.Warn("acknowledge /team", "err", err)
		return
	}
	b.goWork(30*time.Second, func(ctx context.Context) {
		view, err := b.cmds.Team(ctx, i.ChannelID)
		if err != nil {
			b.editResponse(ctx, i, b.errorText(i, err))
			return
		}
		empty := ""
		ctx, cancel := answering(ctx)
		defer cancel()
		_, err = b.s.InteractionResponseEdit(i.Interaction, &discordgo.WebhookEdit{
			Content:         &empty,
			Embeds:          &[]*discordgo.MessageEmbed{toDiscordEmbed(render.Team(view))},
			AllowedMentions: noMentions(),
		}, discordgo.WithContext(ctx))
		if err != nil {
			b.log.Warn("complete /team", "err", err)
		}
	})
}

func toDiscordEmbed(e render.Embed) *discordgo.MessageEmbed {
	out := &discordgo.MessageEmbed{Title: e.Title, Description: e.Description, Color: 0x5865F2}
	for _, f := range e.Fields {
		out.Fields = append(out.Fields, &discordgo.MessageEmbedField{Name: f.Name, Value: f.Value, Inline: f.Inline})
	}
	if e.Footer != "" {
		out.Footer = &discordgo.MessageEmbedFooter{Text: e.Footer}
	}
	return out
}

// sessionCommand runs a command that needs the thread's active session
// and the caller's permissions, after acknowledging it; an error becomes
// what the member reads through errorText.
func (b *Bot) sessionCommand(i *discordgo.InteractionCreate, timeout time.Duration, run func(ctx context.Context, s master.Session, a master.Actor) (string, error)) {
	if err := b.deferEphemeral(i); err != nil {
		b.log.Warn("acknowledge command", "command", i.ApplicationCommandData().Name, "err", err)
		return
	}
	b.goWork(timeout, func(ctx context.Context) {
		s, err := b.cmds.Session(ctx, i.ChannelID)
		var text string
		if err == nil {
			text, err = run(ctx, s, master.Actor{UserID: i.Member.User.ID, Permissions: i.Member.Permissions})
		}
		if err != nil {
			text = b.errorText(i, err)
		}
		b.editResponse(ctx, i, text)
	})
}
