package bot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"
)

// command is a slash command: its definition beside its handler.
type command struct {
	def    *discordgo.ApplicationCommand
	handle func(b *Bot, i *discordgo.InteractionCreate)
	// complete answers autocomplete for the command's options; nil if
	// none autocompletes.
	complete func(b *Bot, i *discordgo.InteractionCreate)
}

// commands is the registry of every slash command, one file each.
var commands = []command{callonCommand, teamCommand, replanCommand, dissolveCommand, rolesCommand, budgetCommand, accessCommand, memoryCommand}

// guildOnly restricts a command to servers (no DMs, no group DMs).
var guildOnly = &[]discordgo.InteractionContextType{discordgo.InteractionContextGuild}

// commandDefinitions is what is registered: every command, translated.
func commandDefinitions() []*discordgo.ApplicationCommand {
	defs := make([]*discordgo.ApplicationCommand, len(commands))
	for i, c := range commands {
		defs[i] = c.def
	}
	return localize(defs)
}

// form is what a button or a modal leads to: handle runs when the
// custom_id of the component clicked, or of the modal submitted, starts
// with prefix.
type form struct {
	prefix string
	handle func(b *Bot, i *discordgo.InteractionCreate, id string)
}

// buttons and modals are the registries of the bot's buttons and modals.
var (
	buttons = []form{dissolveConfirm, dissolveCancel, approveButton, denyButton}
	modals  = []form{rolesSetForm}
)

func (b *Bot) onInteraction(_ *discordgo.Session, i *discordgo.InteractionCreate) {
	if !b.admit() {
		// Stopping: acknowledge nothing that would not be done.
		if i.Type != discordgo.InteractionApplicationCommandAutocomplete {
			b.respondEphemeral(i, "callon is restarting; please try again in a few seconds.")
		}
		return
	}
	defer b.wg.Done()
	if fromBot(i) {
		// A bot runs no command and clicks no button here, trusted or
		// not: commands and buttons are where admin actions are.
		if i.Type != discordgo.InteractionApplicationCommandAutocomplete {
			b.respondEphemeral(i, "Sorry, callon takes commands and clicks from people only, not from bots.")
		}
		return
	}
	switch i.Type {
	case discordgo.InteractionApplicationCommandAutocomplete:
		b.onAutocomplete(i)
		return
	case discordgo.InteractionMessageComponent:
		b.onForm(i, i.MessageComponentData().CustomID, buttons)
		return
	case discordgo.InteractionModalSubmit:
		b.onForm(i, i.ModalSubmitData().CustomID, modals)
		return
	case discordgo.InteractionApplicationCommand:
	default:
		return
	}
	name := i.ApplicationCommandData().Name
	for _, c := range commands {
		if c.def.Name == name {
			if i.Member == nil || i.GuildID == "" {
				b.respondEphemeral(i, "callon works in server channels and threads, not in direct messages.")
				return
			}
			c.handle(b, i)
			return
		}
	}
	b.respondEphemeral(i, fmt.Sprintf("I don't know the command /%s any more; it may have been removed.", name))
}

// fromBot reports whether a bot made the interaction.
func fromBot(i *discordgo.InteractionCreate) bool {
	switch {
	case i.Member != nil && i.Member.User != nil:
		return i.Member.User.Bot
	case i.User != nil:
		return i.User.Bot
	}
	return false
}

// onForm routes a button click or a modal submission by its custom_id.
func (b *Bot) onForm(i *discordgo.InteractionCreate, id string, forms []form) {
	if i.Member == nil || i.GuildID == "" {
		return
	}
	for _, f := range forms {
		if strings.HasPrefix(id, f.prefix) {
			f.handle(b, i, strings.TrimPrefix(id, f.prefix))
			return
		}
	}
	b.respondEphemeral(i, "This form is from an older version of callon; run the command again.")
}

// noMentions lets a message ping nobody.
func noMentions() *discordgo.MessageAllowedMentions {
	return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
}

// respondEphemeral answers at once, visible only to the caller.
func (b *Bot) respondEphemeral(i *discordgo.InteractionCreate, text string) {
	ctx, cancel := context.WithTimeout(b.work, 3*time.Second)
	defer cancel()
	err := b.s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noMentions()},
	}, discordgo.WithContext(ctx))
	if err != nil {
		b.log.Warn("respond to interaction", "command", commandName(i), "err", err)
	}
}

// deferEphemeral acknowledges within Discord's 3 s; the answer follows
// with editResponse.
func (b *Bot) deferEphemeral(i *discordgo.InteractionCreate) error {
	ctx, cancel := context.WithTimeout(b.work, 3*time.Second)
	defer cancel()
	return b.s.InteractionRespond(i.Interaction, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral},
	}, discordgo.WithContext(ctx))
}

// editResponse completes a deferred interaction.
func (b *Bot) editResponse(ctx context.Context, i *discordgo.InteractionCreate, text string) {
	ctx, cancel := answering(ctx)
	defer cancel()
	_, err := b.s.InteractionResponseEdit(i.Interaction, &discordgo.WebhookEdit{Content: &text, AllowedMentions: noMentions()}, discordgo.WithContext(ctx))
	if err != nil {
		b.log.Warn("complete interaction", "command", commandName(i), "err", err)
	}
}

// answerTimeout bounds telling a person what became of their command or
// click.
const answerTimeout = 5 * time.Second

// answering is the context to answer an interaction in once its work is
// done: the work's may have ended (its timeout, the shutdown's grace),
// yet what was acknowledged is answered all the same, within
// answerTimeout.
func answering(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), answerTimeout)
}

// option returns a top-level option by name, or nil.
func option(i *discordgo.InteractionCreate, name string) *discordgo.ApplicationCommandInteractionDataOption {
	for _, o := range i.ApplicationCommandData().Options {
		if o.Name == name {
			return o
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

// guildPermissions is what the member who ran i may do in the whole
// guild, computed from the guild's roles: an interaction's
// member.permissions are the invoking channel's, overwrites included, and
// say nothing of the guild.
func (b *Bot) guildPermissions(ctx context.Context, i *discordgo.InteractionCreate) (int64, error) {
	m, err := b.Channels().GuildMember(ctx, i.GuildID, "", i.Member.User.ID)
	if err != nil {
		return 0, fmt.Errorf("guild permissions: %w", err)
	}
	return m.Permissions, nil
}

// notGuildAdmin answers a member who may not change guild-wide settings.
const notGuildAdmin = "This needs the **Manage Server** permission (or Administrator) in the server itself; a permission in one channel is not enough."
