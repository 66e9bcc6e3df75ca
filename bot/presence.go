package bot

import (
	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// WithPresence gives the bot what /roles features and /memory need: the
// features' resolver and the memory's administration. It returns b.
func (b *Bot) WithPresence(features *master.FeatureConfig, memory *master.MemoryAdmin) *Bot {
	b.features, b.memory = features, memory
	return b
}

// reviewOption is /callon's review: this team's reviewer, whatever the
// channel says.
var reviewOption = &discordgo.ApplicationCommandOption{
	Type: discordgo.ApplicationCommandOptionString, Name: "review",
	Description: "A reviewer checks replies before they are posted (default: as the channel says)",
	Choices: []*discordgo.ApplicationCommandOptionChoice{
		{Name: "on", Value: "on"}, {Name: "off", Value: "off"}, {Name: "always", Value: "always"},
	},
}

// reviewChoice is /callon's review option; "" when not given.
func reviewChoice(i *discordgo.InteractionCreate) master.ReviewMode {
	if o := option(i, "review"); o != nil {
		if m, ok := master.ParseReviewMode(o.StringValue()); ok {
			return m
		}
	}
	return ""
}
