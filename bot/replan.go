package bot

import "github.com/bwmarrin/discordgo"

var replanCommand = command{
	def: &discordgo.ApplicationCommand{
		Name:        "replan",
		Description: "Ask the coordinator to reorganize the team",
		Contexts:    guildOnly,
		Options: []*discordgo.ApplicationCommandOption{{
			Type:        discordgo.ApplicationCommandOptionString,
			Name:        "instruction",
			Description: "What should change (optional)",
			MaxLength:   1000,
		}},
	},
	handle: func(b *Bot, i *discordgo.InteractionCreate) {
		b.respondEphemeral(i, "`/replan` is coming soon. Meanwhile, ask the team in the thread to change its roster.")
	},
}
