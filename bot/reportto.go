package bot

import (
	"github.com/bwmarrin/discordgo"
)

// reportToOption is /callon's optional channel the team reports back to.
var reportToOption = &discordgo.ApplicationCommandOption{
	Type:         discordgo.ApplicationCommandOptionChannel,
	Name:         "report_to",
	Description:  "A channel or thread the team reports back to when it has results",
	ChannelTypes: []discordgo.ChannelType{discordgo.ChannelTypeGuildText, discordgo.ChannelTypeGuildNews, discordgo.ChannelTypeGuildPublicThread},
}

// reportTo is the channel /callon asked the team to report to, "" for
// none.
func reportTo(i *discordgo.InteractionCreate) string {
	if o := option(i, "report_to"); o != nil {
		if id, ok := o.Value.(string); ok {
			return id
		}
	}
	return ""
}
