package bot

import (
	"context"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// whatOption picks the allow list a subcommand of /access changes.
var whatOption = &discordgo.ApplicationCommandOption{
	Type: discordgo.ApplicationCommandOptionString, Name: "what", Required: true,
	Description: "Starting teams, or talking to them",
	Choices: []*discordgo.ApplicationCommandOptionChoice{
		{Name: "start teams", Value: string(master.AccessStart)},
		{Name: "talk to teams", Value: string(master.AccessTalk)},
	},
}

// accessTargets are the user, role and channel an allow or remove names.
var accessTargets = []*discordgo.ApplicationCommandOption{
	{Type: discordgo.ApplicationCommandOptionUser, Name: "user", Description: "A member"},
	{Type: discordgo.ApplicationCommandOptionRole, Name: "role", Description: "The members of a role"},
	{Type: discordgo.ApplicationCommandOptionChannel, Name: "channel", Description: "A channel (its threads included)",
		ChannelTypes: []discordgo.ChannelType{discordgo.ChannelTypeGuildText, discordgo.ChannelTypeGuildNews}},
}

// botOption names the bot /access trust and untrust change.
var botOption = &discordgo.ApplicationCommandOption{
	Type: discordgo.ApplicationCommandOptionUser, Name: "bot", Required: true, Description: "A bot (another app's bot user)",
}

var accessCommand = command{
	def: &discordgo.ApplicationCommand{
		Name:                     "access",
		Description:              "Limit who may start callon teams and talk to them, and where (server admins)",
		Contexts:                 guildOnly,
		DefaultMemberPermissions: ptr(master.PermManageGuild),
		Options: []*discordgo.ApplicationCommandOption{
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "show", Description: "Who may start and talk to teams, and where"},
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "allow",
				Description: "Allow a member, a role or a channel (once a list has entries, only they may)",
				Options:     append([]*discordgo.ApplicationCommandOption{whatOption}, accessTargets...)},
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "remove",
				Description: "Remove a member, a role or a channel from a list",
				Options:     append([]*discordgo.ApplicationCommandOption{whatOption}, accessTargets...)},
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "clear",
				Description: "Empty a list: everyone may again, everywhere",
				Options:     []*discordgo.ApplicationCommandOption{whatOption}},
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "trust",
				Description: "Listen to a bot: it may start teams by mentioning callon, and talk to them",
				Options:     []*discordgo.ApplicationCommandOption{botOption}},
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "untrust",
				Description: "Stop listening to a bot",
				Options:     []*discordgo.ApplicationCommandOption{botOption}},
		},
	},
	handle: (*Bot).handleAccess,
}

func (b *Bot) handleAccess(i *discordgo.InteractionCreate) {
	b.adminCommand(i, func(ctx context.Context, sub *discordgo.ApplicationCommandInteractionDataOption, by string) (string, error) {
		var action master.AccessAction
		if o := sub.GetOption("what"); o != nil {
			action = master.AccessAction(o.StringValue())
		}
		switch sub.Name {
		case "allow":
			return b.limits.AllowAccess(ctx, i.GuildID, accessRules(sub, action), by)
		case "remove":
			return b.limits.RemoveAccess(ctx, i.GuildID, accessRules(sub, action), by)
		case "clear":
			return b.limits.ClearAccess(ctx, i.GuildID, action, by)
		case "trust":
			id, isBot := optionUser(i, sub, "bot")
			return b.limits.TrustBot(ctx, i.GuildID, id, isBot, selfID(b.s), by)
		case "untrust":
			id, _ := optionUser(i, sub, "bot")
			return b.limits.UntrustBot(ctx, i.GuildID, id, by)
		default:
			return b.limits.ShowAccess(ctx, i.GuildID)
		}
	})
}

// accessRules are the rules an allow or remove names.
func accessRules(sub *discordgo.ApplicationCommandInteractionDataOption, action master.AccessAction) []master.AccessRule {
	var rules []master.AccessRule
	for _, t := range []struct {
		option string
		kind   master.AccessKind
	}{{"user", master.AccessUser}, {"role", master.AccessRole}, {"channel", master.AccessChannel}} {
		if o := sub.GetOption(t.option); o != nil {
			if id, ok := o.Value.(string); ok && id != "" {
				rules = append(rules, master.AccessRule{Action: action, Kind: t.kind, ID: id})
			}
		}
	}
	return rules
}

// optionUser is the user a user option names, and whether it is a bot
// (from the interaction's resolved data).
func optionUser(i *discordgo.InteractionCreate, sub *discordgo.ApplicationCommandInteractionDataOption, name string) (id string, bot bool) {
	o := sub.GetOption(name)
	if o == nil {
		return "", false
	}
	id, _ = o.Value.(string)
	if r := i.ApplicationCommandData().Resolved; r != nil {
		if u := r.Users[id]; u != nil {
			bot = u.Bot
		}
	}
	return id, bot
}
