package bot

import (
	"context"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// rolesPickOption is /callon's optional subset of the channel's roster.
var rolesPickOption = &discordgo.ApplicationCommandOption{
	Type:         discordgo.ApplicationCommandOptionString,
	Name:         "roles",
	Description:  "Only these roles of the channel's roster, comma-separated (default: all of them)",
	Autocomplete: true,
	MaxLength:    1000,
}

// pickedRoles is the roles /callon asked for; nil for the whole roster.
func pickedRoles(i *discordgo.InteractionCreate) []string {
	if o := option(i, "roles"); o != nil {
		return master.ParseRoleNames(o.StringValue())
	}
	return nil
}

// checkPicked checks names against the channel's roster before a thread
// is opened for nothing, and returns what to tell the caller if they do
// not fit ("" when they do or none were asked for).
func (b *Bot) checkPicked(ctx context.Context, i *discordgo.InteractionCreate, channelID string, names []string) string {
	guildID := i.GuildID
	if len(names) == 0 {
		return ""
	}
	roster, err := b.roles.Roster(ctx, guildID, channelID)
	if err != nil {
		b.log.Error("resolve roster", "guild_id", guildID, "channel_id", channelID, "err", err)
		return "Sorry, I could not read this channel's roles just now. Please try again."
	}
	if _, err = master.PickRoles(roster, names); err != nil {
		return b.errorText(i, err)
	}
	return ""
}
