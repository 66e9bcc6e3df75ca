package discordfake

import (
	"cmp"
	"fmt"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"
)

// SlashCommand describes a user running a slash command.
type SlashCommand struct {
	Name        string
	ChannelID   string          // default: the first channel of the first guild
	UserID      string          // default: UserID()
	Permissions int64           // the member's permissions in the channel, e.g. discordgo.PermissionAdministrator
	Options     []CommandOption // as the user filled them in
	Locale      string          // the user's client locale, e.g. "de"; default en-US
	GuildLocale string          // the guild's preferred locale; default en-US

	// Unchecked dispatches even if the command is not registered or the
	// options do not match its definition, which Discord never does.
	Unchecked bool
}

// interaction is the server's record of a dispatched interaction.
type interaction struct {
	id          string
	token       string
	typ         discordgo.InteractionType
	name        string // the command's; "" for components and modal submits
	customID    string // the component's or the modal's
	guildID     string
	channelID   string
	user        user
	perms       int64 // the member's permissions
	locale      string
	guildLocale string

	// message is the message of the clicked component; for a modal
	// submit, that of the component whose interaction showed the modal.
	message *message
	modal   *Modal       // the modal shown in answer (callback 9)
	opener  *interaction // for a modal submit: the interaction that showed the modal
	closed  bool         // a submit of this interaction's modal was acknowledged

	dispatched  time.Time
	deadline    time.Time // the first callback must arrive by then
	tokenExpiry time.Time
	expired     bool
	acked       bool
	original    *message
	followups   []*message
	responses   []Response
	timer       *time.Timer
}

// describe names the interaction in test failures.
func (ix *interaction) describe() string {
	switch ix.typ {
	case discordgo.InteractionMessageComponent:
		return "click on " + ix.customID
	case discordgo.InteractionModalSubmit:
		return "submit of modal " + ix.customID
	}
	return "/" + ix.name
}

// invocation is what every interaction has: who acts where.
type invocation struct {
	typ         discordgo.InteractionType
	channel     *channel
	userID      string // default: the default human user
	perms       int64
	locale      string // default: en-US
	guildLocale string // default: en-US
}

// newInteractionLocked files an interaction and starts its deadline.
func (s *Server) newInteractionLocked(inv invocation) *interaction {
	now := time.Now()
	ix := &interaction{
		id:          s.newID(),
		token:       "aW50ZXJhY3Rpb24" + randomHex(24),
		typ:         inv.typ,
		guildID:     inv.channel.guildID,
		channelID:   inv.channel.id,
		user:        s.userLocked(cmp.Or(inv.userID, s.human)),
		perms:       inv.perms,
		locale:      cmp.Or(inv.locale, "en-US"),
		guildLocale: cmp.Or(inv.guildLocale, "en-US"),
		dispatched:  now,
		deadline:    now.Add(s.cfg.deadline),
		tokenExpiry: now.Add(s.cfg.tokenLifetime),
	}
	ix.timer = time.AfterFunc(s.cfg.deadline, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !ix.acked {
			ix.expired = true
			s.notifyLocked()
		}
	})
	s.interactions[ix.id] = ix
	s.ixByToken[ix.token] = ix
	return ix
}

// dispatchInteractionLocked sends INTERACTION_CREATE for ix with its data.
func (s *Server) dispatchInteractionLocked(ix *interaction, data map[string]any) *Interaction {
	ch := s.channels[ix.channelID]
	perms := strconv.FormatInt(ix.perms, 10)
	member := s.guildMemberJSONLocked(ix.guildID, ix.user.id, ix.dispatched.Add(-time.Hour))
	member["user"] = userJSON(ix.user)
	member["permissions"] = perms
	partial := s.channelJSONLocked(ch)
	partial["permissions"] = perms
	payload := map[string]any{
		"id":                             ix.id,
		"application_id":                 s.cfg.appID,
		"type":                           int(ix.typ),
		"token":                          ix.token,
		"version":                        1,
		"guild_id":                       ix.guildID,
		"channel_id":                     ix.channelID,
		"channel":                        partial,
		"member":                         member,
		"app_permissions":                strconv.FormatInt(s.botPermissionsLocked(ch), 10),
		"locale":                         ix.locale,
		"guild_locale":                   ix.guildLocale,
		"context":                        0,
		"authorizing_integration_owners": map[string]string{"0": ix.guildID},
		"entitlements":                   []any{},
		"data":                           data,
	}
	if ix.message != nil {
		payload["message"] = s.messageJSONLocked(ix.message, true)
	}
	s.dispatchLocked("INTERACTION_CREATE", payload)
	return &Interaction{ID: ix.id, Token: ix.token, s: s, ix: ix}
}

// SlashCommand dispatches INTERACTION_CREATE for an application command.
// The command must be registered (in the channel's guild or globally) and
// the options must fit its definition, unless sc.Unchecked is set.
func (s *Server) SlashCommand(sc SlashCommand) (*Interaction, error) {
	return s.dispatchCommand(sc, discordgo.InteractionApplicationCommand)
}

// Autocomplete dispatches INTERACTION_CREATE for autocomplete (type 4):
// exactly one option, at any depth, must be Focused. The bot answers with
// a type 8 callback, recorded as a Response with Choices.
func (s *Server) Autocomplete(sc SlashCommand) (*Interaction, error) {
	return s.dispatchCommand(sc, discordgo.InteractionApplicationCommandAutocomplete)
}

func (s *Server) dispatchCommand(sc SlashCommand, typ discordgo.InteractionType) (*Interaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	chID := sc.ChannelID
	if chID == "" {
		chID = s.guilds[0].channels[0]
	}
	ch := s.channels[chID]
	if ch == nil {
		return nil, fmt.Errorf("slash command /%s: unknown channel %q", sc.Name, chID)
	}
	if err := checkLocales(sc.Locale, sc.GuildLocale); err != nil {
		return nil, fmt.Errorf("slash command /%s: %v", sc.Name, err)
	}
	autocomplete := typ == discordgo.InteractionApplicationCommandAutocomplete
	if focused := countFocused(sc.Options); autocomplete && focused != 1 {
		return nil, fmt.Errorf("autocomplete /%s: %d focused options, want 1", sc.Name, focused)
	}
	cmdID := ""
	if cmd := s.findCommandLocked(ch.guildID, sc.Name); cmd != nil {
		cmdID = cmd.def.ID
		if !sc.Unchecked {
			if err := checkOptions(cmd.def.Options, sc.Options, autocomplete); err != nil {
				return nil, fmt.Errorf("slash command /%s does not fit its registered definition: %v", sc.Name, err)
			}
		}
	} else if !sc.Unchecked {
		return nil, fmt.Errorf("slash command /%s is not registered in guild %s or globally", sc.Name, ch.guildID)
	}

	ix := s.newInteractionLocked(invocation{
		typ: typ, channel: ch, userID: sc.UserID, perms: sc.Permissions, locale: sc.Locale, guildLocale: sc.GuildLocale,
	})
	ix.name = sc.Name
	data := map[string]any{
		"id":       cmp.Or(cmdID, s.newID()),
		"name":     sc.Name,
		"type":     int(discordgo.ChatApplicationCommand),
		"guild_id": ch.guildID,
	}
	if len(sc.Options) > 0 {
		data["options"] = optionsJSON(sc.Options)
	}
	if resolved := s.resolvedLocked(sc.Options, strconv.FormatInt(sc.Permissions, 10)); len(resolved) > 0 {
		data["resolved"] = resolved
	}
	return s.dispatchInteractionLocked(ix, data), nil
}

func (s *Server) botPermissionsLocked(c *channel) int64 {
	if s.denied[c.id] || (c.isThread() && s.denied[c.parentID]) {
		return botPermissions &^ (discordgo.PermissionSendMessages | discordgo.PermissionSendMessagesInThreads |
			discordgo.PermissionCreatePublicThreads | discordgo.PermissionCreatePrivateThreads)
	}
	return botPermissions
}

func (s *Server) findCommandLocked(guildID, name string) *command {
	for _, scope := range []string{guildID, ""} {
		for _, c := range s.commands[scope] {
			if c.def.Name == name && c.def.Type == discordgo.ChatApplicationCommand {
				return c
			}
		}
	}
	return nil
}
