package bot

import (
	"context"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

var dissolveCommand = command{
	def: &discordgo.ApplicationCommand{
		Name:        "dissolve",
		Description: "End this thread's team session",
		Contexts:    guildOnly,
	},
	handle: (*Bot).handleDissolve,
}

func (b *Bot) handleDissolve(i *discordgo.InteractionCreate) {
	b.sessionCommand(i, 30*time.Second, func(ctx context.Context, s master.Session, a master.Actor) (string, error) {
		if err := b.cmds.Dissolve(ctx, s, a); err != nil {
			return "", err
		}
		return "The team is dissolved: its work is stopped, a summary is posted and the thread archived.", nil
	})
}
