package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// onOffChoice is a feature's option of /roles features: on, off, or back
// to the next source's say.
func onOffChoice(name, desc string, extra ...*discordgo.ApplicationCommandOptionChoice) *discordgo.ApplicationCommandOption {
	choices := []*discordgo.ApplicationCommandOptionChoice{{Name: "on", Value: "on"}, {Name: "off", Value: "off"}}
	choices = append(choices, extra...)
	choices = append(choices, &discordgo.ApplicationCommandOptionChoice{Name: "inherit", Value: "inherit"})
	return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionString, Name: name, Description: desc, Choices: choices}
}

// featuresSubcommand is /roles features: what the channel's (or the
// server's) new teams do beyond their one voice.
var featuresSubcommand = &discordgo.ApplicationCommandOption{
	Type: discordgo.ApplicationCommandOptionSubCommand, Name: "features",
	Description: "Turn personas, channel memory and the reviewer on or off for new teams here",
	Options: []*discordgo.ApplicationCommandOption{
		onOffChoice(master.FeaturePersonas, "Members post their parts of a reply under their own names (needs Manage Webhooks)"),
		onOffChoice(master.FeatureMemory, "Teams keep notes for the channel's later teams (on by default)"),
		onOffChoice(master.FeatureReview, "A reviewer checks merged replies before they are posted; always: every reply",
			&discordgo.ApplicationCommandOptionChoice{Name: "always", Value: "always"}),
		scopeOption,
	},
}

// runFeatures changes a scope's features and says what the channel's new
// teams get now.
func (b *Bot) runFeatures(ctx context.Context, sub *discordgo.ApplicationCommandInteractionDataOption, scope master.RoleScope, channelID, by string) (string, error) {
	if b.features == nil {
		return "Features cannot be changed in this deployment.", nil
	}
	var set master.FeatureSettings
	var clear []string
	for _, name := range []string{master.FeaturePersonas, master.FeatureMemory, master.FeatureReview} {
		o := sub.GetOption(name)
		if o == nil {
			continue
		}
		v := o.StringValue()
		switch {
		case v == "inherit":
			clear = append(clear, name)
		case name == master.FeatureReview:
			m, ok := master.ParseReviewMode(v)
			if !ok {
				return "", master.Errorf(master.EInvalid, "review is on, off or always")
			}
			set.Review = &m
		default:
			on := v == "on"
			if name == master.FeaturePersonas {
				set.Personas = &on
			} else {
				set.Memory = &on
			}
		}
	}
	if err := b.features.Set(ctx, scope, set, clear, by); err != nil {
		return "", err
	}
	layers, err := b.features.Layers(ctx, scope.GuildID, channelID)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("✅ Features of %s changed. New teams in <#%s> now get: %s. Teams already at work keep what they started with.",
		scopeWhere(scope), channelID, featuresLine(layers)), nil
}

// featuresLine says what a channel's new teams get, each feature with
// where its value comes from.
func featuresLine(layers []master.FeatureLayer) string {
	f := master.ResolveFeatures(layers)
	from := func(pick func(master.FeatureSettings) bool) string {
		for _, l := range layers {
			if pick(l.Settings) {
				return master.RoleLayer{Source: l.Source, Scope: l.Scope}.Label()
			}
		}
		return "default"
	}
	onOff := func(v bool) string {
		if v {
			return "on"
		}
		return "off"
	}
	parts := []string{
		fmt.Sprintf("personas **%s** (%s)", onOff(f.Personas), from(func(s master.FeatureSettings) bool { return s.Personas != nil })),
		fmt.Sprintf("memory **%s** (%s)", onOff(f.Memory), from(func(s master.FeatureSettings) bool { return s.Memory != nil })),
		fmt.Sprintf("review **%s** (%s)", f.Review, from(func(s master.FeatureSettings) bool { return s.Review != nil })),
	}
	return strings.Join(parts, " · ")
}

// withFeatures puts a channel's features above /roles list's roster, in
// one message.
func (b *Bot) withFeatures(ctx context.Context, guildID, channelID, roles string) (string, error) {
	if b.features == nil {
		return roles, nil
	}
	layers, err := b.features.Layers(ctx, guildID, channelID)
	if err != nil {
		return "", err
	}
	return master.Truncate("**Features**: "+featuresLine(layers)+"\n"+roles, master.MaxMessageLen), nil
}
