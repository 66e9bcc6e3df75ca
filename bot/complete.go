package bot

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// Discord's bounds on autocomplete answers.
const (
	maxChoices   = 25
	maxChoiceLen = 100
)

// completeTimeout leaves the answer time to reach Discord within its 3 s.
const completeTimeout = 2 * time.Second

// onAutocomplete answers an autocomplete interaction (type 4) with a
// type 8 callback, empty when the command completes nothing.
func (b *Bot) onAutocomplete(i *discordgo.InteractionCreate) {
	name := i.ApplicationCommandData().Name
	for _, c := range commands {
		if c.def.Name == name && c.complete != nil && i.Member != nil && i.GuildID != "" {
			// Off the event loop: gateway events are handled one at a
			// time, and completing reads the database.
			b.goWork(3*time.Second, func(context.Context) { c.complete(b, i) })
			return
		}
	}
	b.respondChoices(i, nil)
}

// respondChoices answers an autocomplete interaction. The body is ours:
// discordgo omits an empty choices list, which Discord requires.
func (b *Bot) respondChoices(i *discordgo.InteractionCreate, values []string) {
	type choice struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	body := struct {
		Type discordgo.InteractionResponseType `json:"type"`
		Data struct {
			Choices []choice `json:"choices"`
		} `json:"data"`
	}{Type: discordgo.InteractionApplicationCommandAutocompleteResult}
	body.Data.Choices = []choice{}
	for _, v := range values {
		if v != "" && len(v) <= maxChoiceLen && len(body.Data.Choices) < maxChoices {
			body.Data.Choices = append(body.Data.Choices, choice{Name: v, Value: v})
		}
	}
	ctx, cancel := context.WithTimeout(b.work, 3*time.Second)
	defer cancel()
	endpoint := discordgo.EndpointInteractionResponse(i.ID, i.Token)
	if _, err := b.s.RequestWithBucketID(http.MethodPost, endpoint, body, endpoint, discordgo.WithContext(ctx)); err != nil {
		b.log.Warn("answer autocomplete", "command", i.ApplicationCommandData().Name, "err", err)
	}
}

// focused finds the option being typed, at any depth, with the
// subcommand holding it ("" at the top level) and the options beside it.
func focused(opts []*discordgo.ApplicationCommandInteractionDataOption) (f *discordgo.ApplicationCommandInteractionDataOption, sub string, siblings []*discordgo.ApplicationCommandInteractionDataOption) {
	for _, o := range opts {
		if o.Focused {
			return o, "", opts
		}
		if o.Type == discordgo.ApplicationCommandOptionSubCommand || o.Type == discordgo.ApplicationCommandOptionSubCommandGroup {
			if f, s, sib := focused(o.Options); f != nil {
				if s != "" {
					return f, o.Name + " " + s, sib
				}
				return f, o.Name, sib
			}
		}
	}
	return nil, "", nil
}

// typed is the text of a focused option so far.
func typed(o *discordgo.ApplicationCommandInteractionDataOption) string {
	s, _ := o.Value.(string)
	return s
}

// completeCallon completes /callon's roles: a comma-separated list of the
// channel's roles.
func (b *Bot) completeCallon(i *discordgo.InteractionCreate) {
	f, _, _ := focused(i.ApplicationCommandData().Options)
	if f == nil || f.Name != "roles" {
		b.respondChoices(i, nil)
		return
	}
	ctx, cancel := context.WithTimeout(b.work, completeTimeout)
	defer cancel()
	var names []string
	if channelID, err := b.rosterChannel(ctx, i, i.ChannelID); err == nil {
		if roster, err := b.roles.Roster(ctx, i.GuildID, channelID); err == nil {
			names = master.RoleNames(roster)
		} else {
			b.log.Warn("complete /callon roles", "err", err)
		}
	}
	b.respondChoices(i, completeList(typed(f), names))
}

// completeRoles completes /roles set and remove: role names and models.
func (b *Bot) completeRoles(i *discordgo.InteractionCreate) {
	f, sub, siblings := focused(i.ApplicationCommandData().Options)
	if f == nil || !master.MayManageRoles(i.Member.Permissions) {
		b.respondChoices(i, nil)
		return
	}
	prefix := strings.ToLower(strings.TrimSpace(typed(f)))
	if f.Name == "model" {
		b.respondChoices(i, matching(b.roles.Policy().AllowedModels(), prefix))
		return
	}
	if f.Name == "tools" {
		ctx, cancel := context.WithTimeout(b.work, completeTimeout)
		defer cancel()
		b.respondChoices(i, completeListWith(typed(f), b.toolNames(ctx, i.GuildID), master.ParseToolList))
		return
	}
	if f.Name != "name" {
		b.respondChoices(i, nil)
		return
	}
	ctx, cancel := context.WithTimeout(b.work, completeTimeout)
	defer cancel()
	channelID, err := b.rosterChannel(ctx, i, i.ChannelID)
	if err != nil {
		b.respondChoices(i, nil)
		return
	}
	layers, err := b.roles.Resolve(ctx, i.GuildID, channelID)
	if err != nil {
		b.log.Warn("complete /roles name", "err", err)
		b.respondChoices(i, nil)
		return
	}
	scope := master.RoleScope{GuildID: i.GuildID, ChannelID: channelID}
	for _, o := range siblings {
		if o.Name == "scope" && o.StringValue() == "guild" {
			scope.ChannelID = ""
		}
	}
	// remove offers what the scope itself defines; set also offers the
	// roster in use here, to redefine one of its roles.
	var names []string
	for k, l := range layers {
		if l.Scope == scope && (l.Source == master.SourceChannel || l.Source == master.SourceGuild) ||
			sub == "set" && k == 0 {
			for _, e := range l.Roles {
				if !slices.Contains(names, e.Name) {
					names = append(names, e.Name)
				}
			}
		}
	}
	b.respondChoices(i, matching(names, prefix))
}

// matching is the values that start with prefix, then those that only
// contain it.
func matching(values []string, prefix string) []string {
	var starts, contains []string
	for _, v := range values {
		lv := strings.ToLower(v)
		switch {
		case strings.HasPrefix(lv, prefix):
			starts = append(starts, v)
		case strings.Contains(lv, prefix):
			contains = append(contains, v)
		}
	}
	return append(starts, contains...)
}

// completeList completes the last name of a comma-separated list typed so
// far ("researcher, wr" → "researcher, writer"), leaving out the names
// already in it.
func completeList(typed string, names []string) []string {
	return completeListWith(typed, names, master.ParseRoleNames)
}

// completeListWith is completeList with the list's own parser.
func completeListWith(typed string, names []string, parse func(string) []string) []string {
	head, last := "", typed
	if i := strings.LastIndex(typed, ","); i >= 0 {
		head, last = typed[:i], typed[i+1:]
	}
	chosen := parse(head)
	var rest []string
	for _, n := range names {
		if !slices.Contains(chosen, n) {
			rest = append(rest, n)
		}
	}
	var out []string
	for _, n := range matching(rest, strings.ToLower(strings.TrimSpace(last))) {
		out = append(out, strings.Join(append(slices.Clone(chosen), n), ", "))
	}
	if len(out) == 0 && len(chosen) > 0 {
		out = append(out, strings.Join(chosen, ", "))
	}
	return out
}

// toolNames is what a role's tools list may name in a guild: fetch_url,
// and the tools of the MCP servers granted to it that answer in time.
func (b *Bot) toolNames(ctx context.Context, guild string) []string {
	if t := b.roles.Policy().Tools; t != nil {
		return t.Names(ctx, guild)
	}
	return []string{"fetch_url"}
}
