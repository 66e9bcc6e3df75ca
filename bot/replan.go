package bot

import (
	"context"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

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
	handle: (*Bot).handleReplan,
}

func (b *Bot) handleReplan(i *discordgo.InteractionCreate) {
	var instruction string
	if o := option(i, "instruction"); o != nil {
		instruction = o.StringValue()
	}
	b.sessionCommand(i, 2*time.Minute, func(ctx context.Context, s master.Session, a master.Actor) (string, error) {
		change, err := b.cmds.Replan(ctx, s, a, instruction)
		if err != nil {
			return "", err
		}
		return "Done. " + change, nil
	})
}
