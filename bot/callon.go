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

// startTeam creates or binds the thread and the session, and returns what
// to tell the caller.
func (b *Bot) startTeam(ctx context.Context, i *discordgo.InteractionCreate, goal string) string {
	log := b.log.With("command", "callon", "guild_id", i.GuildID, "channel_id", i.ChannelID)
	ch, err := b.Channels().channel(ctx, i.ChannelID)
	if err != nil {
		log.Error("look up channel", "err", err)
		return "Sorry, I could not look up this channel. Please try again."
	}
	var parentID, threadID string
	switch ch.Type {
	case discordgo.ChannelTypeGuildText, discordgo.ChannelTypeGuildNews:
		parentID = ch.ID
	case discordgo.ChannelTypeGuildPublicThread, discordgo.ChannelTypeGuildPrivateThread, discordgo.ChannelTypeGuildNewsThread:
		parentID, threadID = ch.ParentID, ch.ID
		if _, err := b.store.ActiveSession(ctx, threadID); err == nil {
			return "This thread already has an active team: talk to it here, or end it with `/dissolve` first."
		}
	default:
		return "Start a team from a text channel (I will open a thread) or from inside a thread."
	}
	names := pickedRoles(i)
	if msg := b.checkPicked(ctx, i, parentID, names); msg != "" {
		return msg
	}
	report := reportTo(i)
	if msg := b.checkReportTo(ctx, i, report); msg != "" {
		return msg
	}
	// Refuse before opening a thread a refusal would leave empty.
	if err := b.svc.CheckStart(ctx, master.Starter{GuildID: i.GuildID, ChannelID: parentID, UserID: i.Member.User.ID, Roles: i.Member.Roles}); err != nil {
		return b.errorText(i, err)
	}
	opened := threadID == ""
	if opened {
		th, err := b.Channels().StartThread(ctx, parentID, threadName(goal))
		if err != nil {
			log.Warn("start thread", "err", err)
			if code := discordCode(err); code == codeMissingPerms || code == codeMissingAccess {
				return "I can't open a thread here. I need the **Create Public Threads** and **Send Messages in Threads** permissions in this channel."
			}
			return "Sorry, Discord would not let me open a thread just now. Please try again."
		}
		threadID = th
	}
	sess, roster, err := b.svc.StartSession(ctx, master.NewSession{
		GuildID: i.GuildID, ChannelID: parentID, ThreadID: threadID, OwnerID: i.Member.User.ID, Goal: goal, Roles: names, ReportTo: report,
		Review: reviewChoice(i),
	})
	if err != nil {
		if opened && master.ErrorCode(err) == master.ELimit {
			// A cap reached since the check: the thread stays empty.
			if aerr := b.Messenger().Archive(ctx, threadID); aerr != nil {
				log.Warn("archive the thread of a refused team", "thread_id", threadID, "err", aerr)
			}
		}
		return b.errorText(i, err)
	}
	log.Info("session started", "session_id", sess.ID, "thread_id", threadID, "roles", len(roster))
	return fmt.Sprintf("Your team (%s) is ready in <#%s>: %s", strings.Join(master.RoleNames(roster), ", "), threadID, master.JumpURL(i.GuildID, threadID))
}

// threadName makes a thread name (at most 100 characters) from a goal.
func threadName(goal string) string {
	name := strings.Join(strings.Fields(goal), " ")
	return master.Truncate(name, 100)
}
