package bot

import (
	"context"
	"errors"
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
	b.sessionCommand(i, 2*time.Minute, func(ctx context.Context, s master.Session, a master.Actor) string {
		change, err := b.cmds.Replan(ctx, s, a, instruction)
		switch {
		case errors.Is(err, master.ErrNotAllowed):
			return "Only the person who started this team, or members who can manage threads, can reorganize it."
		case errors.Is(err, master.ErrNotFound):
			return notInSession
		case err != nil:
			b.log.Error("/replan", "session_id", s.ID, "err", err)
			return "Sorry, the team could not be reorganized just now. Please try again."
		}
		return "Done. " + change
	})
}
