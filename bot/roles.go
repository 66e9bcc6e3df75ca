package bot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/master"
)

// scopeOption picks where /roles set, remove and reset apply.
var scopeOption = &discordgo.ApplicationCommandOption{
	Type:        discordgo.ApplicationCommandOptionString,
	Name:        "scope",
	Description: "This channel only (default), or every channel of the server without roles of its own",
	Choices: []*discordgo.ApplicationCommandOptionChoice{
		{Name: "this channel", Value: "channel"},
		{Name: "whole server", Value: "guild"},
	},
}

// roleNameOption is a role's name, completed from the roles defined.
func roleNameOption(desc string) *discordgo.ApplicationCommandOption {
	return &discordgo.ApplicationCommandOption{
		Type: discordgo.ApplicationCommandOptionString, Name: "name", Description: desc,
		Required: true, Autocomplete: true, MaxLength: 32,
	}
}

var rolesCommand = command{
	def: &discordgo.ApplicationCommand{
		Name:                     "roles",
		Description:              "See and change the roles callon teams may use in a channel (server admins)",
		Contexts:                 guildOnly,
		DefaultMemberPermissions: ptr(master.PermManageChannels),
		Options: []*discordgo.ApplicationCommandOption{
			{
				Type: discordgo.ApplicationCommandOptionSubCommand, Name: "list",
				Description: "Show the roles a team started in a channel gets, and where they come from",
				Options: []*discordgo.ApplicationCommandOption{{
					Type: discordgo.ApplicationCommandOptionChannel, Name: "channel",
					Description: "Another channel (default: this one)",
					ChannelTypes: []discordgo.ChannelType{discordgo.ChannelTypeGuildText, discordgo.ChannelTypeGuildNews,
						discordgo.ChannelTypeGuildPublicThread, discordgo.ChannelTypeGuildPrivateThread, discordgo.ChannelTypeGuildNewsThread},
				}},
			},
			{
				Type: discordgo.ApplicationCommandOptionSubCommand, Name: "set",
				Description: "Add a role, or replace one, for this channel or the whole server",
				Options: []*discordgo.ApplicationCommandOption{
					roleNameOption("Lowercase slug, e.g. copywriter or market-analyst"),
					{
						Type: discordgo.ApplicationCommandOptionString, Name: "description",
						Description: "One line: what the role is for (the coordinator routes by it)", MaxLength: master.MaxDescriptionLen,
					},
					{
						Type: discordgo.ApplicationCommandOptionString, Name: "prompt",
						Description: "The role's instructions (leave out to write several lines in a form)", MaxLength: 6000,
					},
					{
						Type: discordgo.ApplicationCommandOptionString, Name: "model", Autocomplete: true,
						Description: "The model it runs on (default: the worker model)", MaxLength: 100,
					},
					scopeOption,
					{
						Type: discordgo.ApplicationCommandOptionNumber, Name: "temperature",
						Description: "Sampling temperature, 0 to 2", MinValue: ptr(0.0), MaxValue: 2,
					},
					{
						Type: discordgo.ApplicationCommandOptionInteger, Name: "max_tokens",
						Description: "Most tokens in one answer", MinValue: ptr(1.0), MaxValue: master.MaxRoleTokens,
					},
					{
						Type: discordgo.ApplicationCommandOptionInteger, Name: "timeout",
						Description: "Seconds it may spend on one subtask",
						MinValue:    ptr(master.MinRoleTimeout.Seconds()), MaxValue: master.MaxRoleTimeout.Seconds(),
					},
					{
						Type: discordgo.ApplicationCommandOptionString, Name: "tools", Autocomplete: true, MaxLength: maxToolsOption,
						Description: "What it may use, comma-separated: fetch_url, server.tool, server.* (default: none)",
					},
				},
			},
			{
				Type: discordgo.ApplicationCommandOptionSubCommand, Name: "remove",
				Description: "Remove a role from this channel or the whole server",
				Options:     []*discordgo.ApplicationCommandOption{roleNameOption("The role to remove"), scopeOption},
			},
			{
				Type: discordgo.ApplicationCommandOptionSubCommand, Name: "reset",
				Description: "Remove every role of this channel (or the server), falling back to the next source",
				Options:     []*discordgo.ApplicationCommandOption{scopeOption},
			},
			featuresSubcommand,
		},
	},
	handle:   (*Bot).handleRoles,
	complete: (*Bot).completeRoles,
}

// maxToolsOption bounds the tools option, as typed.
const maxToolsOption = 1000

// notRoleAdmin answers a member who may not change roles.
const notRoleAdmin = "Only members who can manage channels (or administrators) can see and change callon's roles."

func (b *Bot) handleRoles(i *discordgo.InteractionCreate) {
	// Discord hides the command from other members by default, but a
	// server's Integrations settings can show it to anyone: check here.
	if !master.MayManageRoles(i.Member.Permissions) {
		b.respondEphemeral(i, notRoleAdmin)
		return
	}
	opts := i.ApplicationCommandData().Options
	if len(opts) != 1 || opts[0].Type != discordgo.ApplicationCommandOptionSubCommand {
		b.respondEphemeral(i, "Use `/roles list`, `/roles set`, `/roles remove` or `/roles reset`.")
		return
	}
	sub := opts[0]
	if sub.Name == "set" && (sub.GetOption("prompt") == nil || sub.GetOption("description") == nil) {
		b.showRoleForm(i, sub) // a multi-line prompt cannot be typed into an option
		return
	}
	b.runRolesCommand(i, sub)
}

// runRolesCommand acknowledges a /roles subcommand and runs it.
func (b *Bot) runRolesCommand(i *discordgo.InteractionCreate, sub *discordgo.ApplicationCommandInteractionDataOption) {
	if err := b.deferEphemeral(i); err != nil {
		b.log.Warn("acknowledge /roles", "err", err)
		return
	}
	b.goWork(30*time.Second, func(ctx context.Context) {
		log := b.log.With("command", "roles "+sub.Name, "guild_id", i.GuildID, "channel_id", i.ChannelID, "user_id", i.Member.User.ID)
		text, err := b.runRoles(ctx, i, sub)
		switch {
		case err != nil:
			text = b.errorText(i, err)
		case sub.Name != "list":
			log.Info("roles changed")
		}
		b.editResponse(ctx, i, text)
	})
}

// runRoles runs a /roles subcommand and returns the answer.
func (b *Bot) runRoles(ctx context.Context, i *discordgo.InteractionCreate, sub *discordgo.ApplicationCommandInteractionDataOption) (string, error) {
	by := i.Member.User.ID
	target := i.ChannelID
	if sub.Name == "list" {
		if o := sub.GetOption("channel"); o != nil {
			if id, ok := o.Value.(string); ok && id != "" {
				target = id
			}
		}
	}
	if target != i.ChannelID {
		// Another channel's roles (and their prompts) are for those who
		// can see it, in this server.
		m, err := b.Channels().GuildMember(ctx, i.GuildID, target, i.Member.User.ID)
		if err != nil || m.Permissions&master.PermViewChannel == 0 {
			return "", &master.Error{Code: master.ENotAllowed, Err: master.ErrNotAllowed,
				Message: "You can only list the roles of channels of this server that you can see."}
		}
	}
	channelID, err := b.rosterChannel(ctx, i, target)
	if err != nil {
		return "", err
	}
	scope := master.RoleScope{GuildID: i.GuildID, ChannelID: channelID}
	if o := sub.GetOption("scope"); o != nil && o.StringValue() == "guild" {
		scope.ChannelID = ""
		// The whole server's roles change every channel's teams: that
		// takes the server-level permission, not a channel's.
		perms, err := b.guildPermissions(ctx, i)
		if err != nil {
			return "", err
		}
		if !master.MayManageGuild(perms) {
			return "", &master.Error{Code: master.ENotAllowed, Err: master.ErrNotAllowed,
				Message: "Changing the whole server's roles needs the **Manage Server** permission (or Administrator) in the server itself; managing a channel is not enough. You can still change this channel's roles."}
		}
	}
	before, err := b.roles.Resolve(ctx, i.GuildID, channelID)
	if err != nil {
		return "", err
	}
	var done string
	switch sub.Name {
	case "list":
		changes, err := b.roles.RoleChanges(ctx, i.GuildID, channelID, 5)
		if err != nil {
			return "", err
		}
		return b.withFeatures(ctx, i.GuildID, channelID, render.Roles(channelID, before, changes, b.roles.Policy()))
	case "features":
		return b.runFeatures(ctx, sub, scope, channelID, by)
	case "set":
		role := roleFromOptions(sub)
		if len(role.Tools) > 0 {
			// Tools act on the operator's servers and the network: a
			// server-wide power, granted with Manage Server, never with a
			// channel's permission.
			perms, err := b.guildPermissions(ctx, i)
			if err != nil {
				return "", err
			}
			if !master.MayManageGuild(perms) {
				return "", &master.Error{Code: master.ENotAllowed, Err: master.ErrNotAllowed,
					Message: "Giving a role tools needs the **Manage Server** permission (or Administrator) in the server itself: tools act on systems and the network, which is a server-wide power, not a channel's. You can still set the role without `tools`."}
			}
		}
		created, err := b.roles.SetRole(ctx, scope, role, by)
		if master.ErrorCode(err) == master.EInvalid {
			return "", master.Errorf(master.EInvalid, "could not save role **%s**: %s", role.Name, master.ErrorMessage(err))
		}
		if err != nil {
			return "", err
		}
		verb := "updated in"
		if created {
			verb = "added to"
		}
		done = fmt.Sprintf("✅ Role **%s** %s %s, running on `%s`%s.", strings.ToLower(strings.TrimSpace(role.Name)), verb, scopeName(scope),
			b.roles.Policy().ModelOf(role), master.ToolsLine(", with tools ", role.Tools))
	case "remove":
		name := sub.GetOption("name").StringValue()
		if err := b.roles.RemoveRole(ctx, scope, name, by); err != nil {
			return "", err
		}
		done = fmt.Sprintf("🗑️ Role **%s** removed from %s.", name, scopeName(scope))
	case "reset":
		names, err := b.roles.ResetRoles(ctx, scope, by)
		if err != nil {
			return "", err
		}
		if len(names) == 0 {
			return sentence(fmt.Sprintf("%s has no roles of its own: nothing to reset", scopeWhere(scope))), nil
		}
		done = fmt.Sprintf("♻️ Removed the roles of %s: %s.", scopeName(scope), quoted(names))
	default:
		return "Use `/roles list`, `/roles set`, `/roles remove` or `/roles reset`.", nil
	}
	after, err := b.roles.Resolve(ctx, i.GuildID, channelID)
	if err != nil {
		return "", err
	}
	return done + "\n" + rosterChange(channelID, before, after), nil
}

// rosterChange tells an admin what a change did to the channel's roster,
// since a roster is the first non-empty source, never a merge.
func rosterChange(channelID string, before, after []master.RoleLayer) string {
	now := fmt.Sprintf("Teams started in <#%s> now get %s.", channelID, master.RosterLine(after))
	b, a := before[0], after[0]
	switch {
	case a.Scope != b.Scope || a.Source != b.Source:
		now += fmt.Sprintf(" Before, they got %s. A channel uses the first of these that has roles, never a mix: its own, the server's, the roles file's, the built-in ones.", master.RosterLine(before))
	case len(after) > 1 && after[1].Source == master.SourceGuild && a.Source == master.SourceChannel:
		now += " This channel has roles of its own, so the server's roles do not apply here."
	}
	return now + "\nTeams already running keep the roster they started with."
}

// rosterChannel is the channel whose roster applies to id: id itself, or
// a thread's parent.
func (b *Bot) rosterChannel(ctx context.Context, i *discordgo.InteractionCreate, id string) (string, error) {
	if i.Type == discordgo.InteractionApplicationCommand {
		if data := i.ApplicationCommandData(); data.Resolved != nil {
			if ch, ok := data.Resolved.Channels[id]; ok && ch.ParentID != "" && ch.IsThread() {
				return ch.ParentID, nil
			}
		}
	}
	ch, err := b.Channels().channel(ctx, id)
	if err != nil {
		return "", fmt.Errorf("look up channel %s: %w", id, err)
	}
	if ch.IsThread() {
		return ch.ParentID, nil
	}
	return ch.ID, nil
}

func roleFromOptions(sub *discordgo.ApplicationCommandInteractionDataOption) master.Role {
	var r master.Role
	for _, o := range sub.Options {
		switch o.Name {
		case "name":
			r.Name = o.StringValue()
		case "description":
			r.Description = o.StringValue()
		case "prompt":
			r.Prompt = o.StringValue()
		case "model":
			r.Model = strings.TrimSpace(o.StringValue())
		case "temperature":
			r.Temperature = ptr(float32(o.FloatValue()))
		case "max_tokens":
			r.MaxTokens = int(o.IntValue())
		case "timeout":
			r.Timeout = time.Duration(o.IntValue()) * time.Second
		case "tools":
			r.Tools = master.ParseToolList(o.StringValue())
		}
	}
	return r
}

// scopeWhere names a scope: a channel, or the server.
func scopeWhere(s master.RoleScope) string {
	if s.ChannelID == "" {
		return "this server"
	}
	return fmt.Sprintf("<#%s>", s.ChannelID)
}

// scopeName names a scope's roster.
func scopeName(s master.RoleScope) string {
	if s.ChannelID == "" {
		return "this server's roster"
	}
	return fmt.Sprintf("<#%s>'s roster", s.ChannelID)
}

// quoted is names as `a`, `b`.
func quoted(names []string) string {
	return "`" + strings.Join(names, "`, `") + "`"
}

// sentence capitalizes s and ends it with a full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
