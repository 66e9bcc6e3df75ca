package bot

import (
	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// WithPresence gives the bot what /roles features, /memory and personas
// need: the features' resolver, the memory's administration, the rows of
// the channels' webhooks and how personas' pictures are picked. Call it
// before Messenger. It returns b.
func (b *Bot) WithPresence(features *master.FeatureConfig, memory *master.MemoryAdmin, hooks WebhookStore, avatars Avatars) *Bot {
	b.features, b.memory = features, memory
	if hooks != nil {
		b.personas = newPersonas(b.s, hooks, func() string { return appOf(b.s) }, avatars)
	}
	return b
}

// appOf is the application's id, once READY gave it.
func appOf(s *discordgo.Session) string {
	s.State.RLock()
	defer s.State.RUnlock()
	if s.State.Application != nil {
		return s.State.Application.ID
	}
	return ""
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
