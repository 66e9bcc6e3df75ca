package bot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

var callonCommand = command{
	def: &discordgo.ApplicationCommand{
		Name:        "callon",
		Description: "Start a team session in a new thread (or in this thread) to work on a goal",
		Contexts:    guildOnly,
		Options: []*discordgo.ApplicationCommandOption{{
			Type:        discordgo.ApplicationCommandOptionString,
			Name:        "goal",
			Description: "What the team should work on",
			Required:    true,
			MaxLength:   master.MaxGoalLen,
		}, rolesPickOption, reportToOption, reviewOption},
	},
	handle:   (*Bot).handleCallon,
	complete: (*Bot).completeCallon,
}

func (b *Bot) handleCallon(i *discordgo.InteractionCreate) {
	var goal string
	if o := option(i, "goal"); o != nil {
		goal = o.StringValue()
	}
	goal, err := master.CheckGoal(goal)
	if err != nil {
		b.respondEphemeral(i, b.errorText(i, err))
		return
	}
	if err := b.deferEphemeral(i); err != nil {
		b.log.Warn("acknowledge /callon", "err", err)
		return
	}
	b.goWork(time.Minute, func(ctx context.Context) {
		b.editResponse(ctx, i, b.startTeam(ctx, i, goal))
	})
}

// startTeam starts the team (master.Launcher.Launch: the thread is
// opened, or this thread bound) and returns what to tell the caller.
func (b *Bot) startTeam(ctx context.Context, i *discordgo.InteractionCreate, goal string) string {
	l, err := b.launcher().Launch(ctx, master.Launch{
		Entrance: master.FromCommand, GuildID: i.GuildID, Channel: i.ChannelID,
		UserID: i.Member.User.ID, Who: "You", Present: true, Roles: i.Member.Roles,
		Goal: goal, Pick: pickedRoles(i), ReportTo: reportTo(i), Review: reviewChoice(i),
	})
	if err != nil {
		return b.errorText(i, err)
	}
	s := l.Session
	return fmt.Sprintf("Your team (%s) is ready in <#%s>: %s", strings.Join(master.RoleNames(l.Roster), ", "), s.ThreadID, master.JumpURL(s.GuildID, s.ThreadID))
}

// launcher starts teams through this bot's channels.
func (b *Bot) launcher() master.Launcher {
	return master.Launcher{Service: b.svc, Channels: b.Channels(), Guilds: b.Channels(), Archive: b.Messenger().Archive, Log: b.log}
}
