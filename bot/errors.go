package bot

import (
	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// somethingWrong is what a member reads when a command fails for a reason
// that is not theirs to fix.
const somethingWrong = "Sorry, something went wrong on my side. Please try again in a moment."

// errorText turns any error a command met into what the member reads: the
// safe message of a *master.Error (a problem with their input marked ❌),
// or, for any other error, a generic sentence, the error being logged
// with the interaction.
func (b *Bot) errorText(i *discordgo.InteractionCreate, err error) string {
	switch master.ErrorCode(err) {
	case master.EInternal:
		b.log.Error("command failed", "command", commandName(i), "interaction_id", i.ID,
			"guild_id", i.GuildID, "channel_id", i.ChannelID, "err", err)
		return somethingWrong
	case master.EInvalid:
		return "❌ " + sentence(master.ErrorMessage(err))
	default:
		return master.ErrorMessage(err)
	}
}

// commandName names the command of an interaction, for logs.
func commandName(i *discordgo.InteractionCreate) string {
	if i.Type == discordgo.InteractionApplicationCommand || i.Type == discordgo.InteractionApplicationCommandAutocomplete {
		return i.ApplicationCommandData().Name
	}
	return i.Type.String()
}
