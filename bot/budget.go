package bot

import (
	"context"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// tokensOption is a budget in tokens; omitted, the budget goes back to
// the deployment's default.
var tokensOption = &discordgo.ApplicationCommandOption{
	Type: discordgo.ApplicationCommandOptionInteger, Name: "tokens",
	Description: "Tokens; 0 for no limit. Leave it out to go back to the default",
	MinValue:    ptr(0.0), MaxValue: master.MaxBudget,
}

var budgetCommand = command{
	def: &discordgo.ApplicationCommand{
		Name:                     "budget",
		Description:              "See and change how many tokens callon teams may use (server admins)",
		Contexts:                 guildOnly,
		DefaultMemberPermissions: ptr(master.PermManageGuild),
		Options: []*discordgo.ApplicationCommandOption{
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "show",
				Description: "What this server (and, in a team's thread, the team) used and may use"},
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "server",
				Description: "Set this server's daily token budget (UTC days), for all its teams together",
				Options:     []*discordgo.ApplicationCommandOption{tokensOption}},
			{Type: discordgo.ApplicationCommandOptionSubCommand, Name: "team",
				Description: "Set the token budget of this thread's team",
				Options:     []*discordgo.ApplicationCommandOption{tokensOption}},
		},
	},
	handle: (*Bot).handleBudget,
}

func (b *Bot) handleBudget(i *discordgo.InteractionCreate) {
	b.adminCommand(i, func(ctx context.Context, sub *discordgo.ApplicationCommandInteractionDataOption, by string) (string, error) {
		var tokens *int64
		if o := sub.GetOption("tokens"); o != nil {
			tokens = ptr(o.IntValue())
		}
		switch sub.Name {
		case "server":
			return b.limits.SetGuildBudget(ctx, i.GuildID, tokens, by)
		case "team":
			return b.limits.SetTeamBudget(ctx, i.ChannelID, tokens, by)
		default:
			return b.limits.ShowBudget(ctx, i.GuildID, i.ChannelID)
		}
	})
}

// adminCommand runs a subcommand of a command for server admins: it
// acknowledges the interaction, checks that the member may manage the
// guild (computed from the guild's roles, whatever Discord's command
// settings show), runs it, and answers privately.
func (b *Bot) adminCommand(i *discordgo.InteractionCreate, run func(ctx context.Context, sub *discordgo.ApplicationCommandInteractionDataOption, by string) (string, error)) {
	opts := i.ApplicationCommandData().Options
	if len(opts) != 1 || opts[0].Type != discordgo.ApplicationCommandOptionSubCommand {
		b.respondEphemeral(i, "Pick a subcommand.")
		return
	}
	sub := opts[0]
	if err := b.deferEphemeral(i); err != nil {
		b.log.Warn("acknowledge command", "command", commandName(i), "err", err)
		return
	}
	b.goWork(30*time.Second, func(ctx context.Context) {
		log := b.log.With("command", commandName(i)+" "+sub.Name, "guild_id", i.GuildID, "channel_id", i.ChannelID, "user_id", i.Member.User.ID)
		perms, err := b.guildPermissions(ctx, i)
		var text string
		switch {
		case err != nil:
		case !master.MayManageGuild(perms):
			text = notGuildAdmin
		default:
			text, err = run(ctx, sub, i.Member.User.ID)
			if err == nil && sub.Name != "show" {
				log.Info("limits changed")
			}
		}
		if err != nil {
			text = b.errorText(i, err)
		}
		b.editResponse(ctx, i, text)
	})
}
