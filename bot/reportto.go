package bot

import (
	"context"
	"fmt"

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

// checkReportTo returns what to tell the caller when the bot cannot post
// in the report channel ("" when it can, or none was asked for).
func (b *Bot) checkReportTo(ctx context.Context, channelID string) string {
	if channelID == "" {
		return ""
	}
	if err := b.Channels().CanPost(ctx, channelID); err != nil {
		b.log.Info("report_to refused", "channel_id", channelID, "err", err)
		return fmt.Sprintf("I can't post in <#%s>, so the team could not report there. Pick a channel where I may send messages, or give me the **Send Messages** permission there.", channelID)
	}
	return ""
}
