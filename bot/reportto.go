package bot

import (
	"context"
	"fmt"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
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

// checkReportTo returns what to tell the caller when the team may not
// report to a channel ("" when it may, or none was asked for): the caller
// must be able to see and post there, and so must the bot. The caller's
// permissions there are computed from the guild (discordgo v0.29 drops
// the permissions Discord resolves for a channel option; they are the
// same computation).
func (b *Bot) checkReportTo(ctx context.Context, i *discordgo.InteractionCreate, channelID string) string {
	if channelID == "" {
		return ""
	}
	ch, err := b.Channels().channel(ctx, channelID)
	var m master.GuildMember
	if err == nil {
		m, err = b.Channels().GuildMember(ctx, i.GuildID, channelID, i.Member.User.ID)
	}
	if err != nil {
		b.log.Warn("check report_to permissions", "channel_id", channelID, "err", err)
		return fmt.Sprintf("I could not check whether you may post in <#%s>. Please try again.", channelID)
	}
	if !master.MayPost(m.Permissions, ch.IsThread()) {
		b.log.Info("report_to refused: the caller may not post there", "channel_id", channelID, "user_id", i.Member.User.ID)
		return fmt.Sprintf("You can't post in <#%s>, so your team may not report there either. Pick a channel where you may send messages.", channelID)
	}
	if err := b.Channels().CanPost(ctx, channelID); err != nil {
		b.log.Info("report_to refused", "channel_id", channelID, "err", err)
		return fmt.Sprintf("I can't post in <#%s>, so the team could not report there. Pick a channel where I may send messages, or give me the **Send Messages** permission there.", channelID)
	}
	return ""
}
