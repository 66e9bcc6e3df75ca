package bot

import "github.com/bwmarrin/discordgo"

var dissolveCommand = command{
	def: &discordgo.ApplicationCommand{
		Name:        "dissolve",
		Description: "End this thread's team session",
		Contexts:    guildOnly,
	},
	handle: func(b *Bot, i *discordgo.InteractionCreate) {
		b.respondEphemeral(i, "`/dissolve` is coming soon.")
	},
}
