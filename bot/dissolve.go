package bot

import (
	"context"
	"errors"
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
	b.sessionCommand(i, 30*time.Second, func(ctx context.Context, s master.Session, a master.Actor) string {
		err := b.cmds.Dissolve(ctx, s, a)
		switch {
		case errors.Is(err, master.ErrNotAllowed):
			return "Only the person who started this team, or members who can manage threads, can dissolve it."
		case errors.Is(err, master.ErrNotFound):
			return notInSession
		case err != nil:
			b.log.Error("/dissolve", "session_id", s.ID, "err", err)
			return "Sorry, the team could not be dissolved just now. Please try again."
		}
		return "The team is dissolved: its work is stopped, a summary is posted and the thread archived."
	})
}
