package bot

import "github.com/bwmarrin/discordgo"

var teamCommand = command{
	def: &discordgo.ApplicationCommand{
		Name:        "team",
		Description: "Show this thread's team: members, their status and the work in progress",
		Contexts:    guildOnly,
	},
	handle: func(b *Bot, i *discordgo.InteractionCreate) {
		b.respondEphemeral(i, "`/team` is coming soon: the team's status is shown in the status message of each turn meanwhile.")
	},
}
