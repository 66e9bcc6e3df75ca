package bot

import (
	"context"
	"fmt"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/master"
)

var memoryCommand = command{
	def: &discordgo.ApplicationCommand{
		Name:                     "memory",
		Description:              "See and edit the notes this channel's teams keep (server admins)",
		Contexts:                 guildOnly,
		DefaultMemberPermissions: ptr(master.PermManageChannels),
		Options: []*discordgo.ApplicationCommandOption{
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "show", Description: "List the notes this channel's teams keep"},
			{
				Type: discordgo.ApplicationCommandOptionSubCommand, Name: "forget", Description: "Remove one note: no team sees it again",
				Options: []*discordgo.ApplicationCommandOption{{
					Type: discordgo.ApplicationCommandOptionInteger, Name: "note", Description: "The note's number, as /memory show lists it",
					Required: true, MinValue: ptr(1.0),
				}},
			},
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "clear", Description: "Remove every note of this channel"},
		},
	},
	handle: (*Bot).handleMemory,
}

// handleMemory answers /memory, ephemerally: the notes of the channel
// the command is used in (a thread's parent).
func (b *Bot) handleMemory(i *discordgo.InteractionCreate) {
	opts := i.ApplicationCommandData().Options
	if b.memory == nil || len(opts) != 1 {
		b.respondEphemeral(i, "Use `/memory show`, `/memory forget` or `/memory clear`.")
		return
	}
	if err := b.deferEphemeral(i); err != nil {
		b.log.Warn("acknowledge /memory", "err", err)
		return
	}
	sub := opts[0]
	b.goWork(30*time.Second, func(ctx context.Context) {
		text, err := b.runMemory(ctx, i, sub)
		if err != nil {
			text = b.errorText(i, err)
		} else if sub.Name != "show" {
			b.log.Info("memory changed", "command", "memory "+sub.Name, "guild_id", i.GuildID, "channel_id", i.ChannelID, "user_id", i.Member.User.ID)
		}
		b.editResponse(ctx, i, text)
	})
}

func (b *Bot) runMemory(ctx context.Context, i *discordgo.InteractionCreate, sub *discordgo.ApplicationCommandInteractionDataOption) (string, error) {
	a := master.Actor{UserID: i.Member.User.ID, Permissions: i.Member.Permissions}
	channelID, err := b.rosterChannel(ctx, i, i.ChannelID)
	if err != nil {
		return "", err
	}
	switch sub.Name {
	case "show":
		notes, err := b.memory.Show(ctx, a, i.GuildID, channelID)
		if err != nil {
			return "", err
		}
		return render.Notes(channelID, notes), nil
	case "forget":
		id := sub.GetOption("note").IntValue()
		if err := b.memory.Forget(ctx, a, i.GuildID, channelID, id); err != nil {
			return "", err
		}
		return fmt.Sprintf("🗑️ Note %d forgotten: no team of <#%s> sees it again.", id, channelID), nil
	case "clear":
		n, err := b.memory.Clear(ctx, a, i.GuildID, channelID)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("🗑️ Removed %d %s of <#%s>.", n, map[bool]string{true: "note", false: "notes"}[n == 1], channelID), nil
	}
	return "Use `/memory show`, `/memory forget` or `/memory clear`.", nil
}
