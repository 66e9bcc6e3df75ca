package discordfake

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/bwmarrin/discordgo"
)

// CommandOption is an option value of a slash command, or a subcommand or
// group holding options. Build one with StringOption, IntegerOption and the
// other constructors.
type CommandOption struct {
	Name    string
	Type    discordgo.ApplicationCommandOptionType
	Value   any // string, int64, float64 or bool; snowflake strings for users and channels
	Options []CommandOption
	Focused bool // the option being typed, for autocomplete
}

// StringOption is a string option.
func StringOption(name, v string) CommandOption {
	return CommandOption{Name: name, Type: discordgo.ApplicationCommandOptionString, Value: v}
}

// IntegerOption is an integer option.
func IntegerOption(name string, v int64) CommandOption {
	return CommandOption{Name: name, Type: discordgo.ApplicationCommandOptionInteger, Value: v}
}

// NumberOption is a number (float) option.
func NumberOption(name string, v float64) CommandOption {
	return CommandOption{Name: name, Type: discordgo.ApplicationCommandOptionNumber, Value: v}
}

// BoolOption is a boolean option.
func BoolOption(name string, v bool) CommandOption {
	return CommandOption{Name: name, Type: discordgo.ApplicationCommandOptionBoolean, Value: v}
}

// ChannelOption is a channel option; the channel is also put in the
// interaction's resolved data.
func ChannelOption(name, channelID string) CommandOption {
	return CommandOption{Name: name, Type: discordgo.ApplicationCommandOptionChannel, Value: channelID}
}

// UserOption is a user option; the user is also put in the interaction's
// resolved data.
func UserOption(name, userID string) CommandOption {
	return CommandOption{Name: name, Type: discordgo.ApplicationCommandOptionUser, Value: userID}
}

// Subcommand is a subcommand with its options.
func Subcommand(name string, opts ...CommandOption) CommandOption {
	return CommandOption{Name: name, Type: discordgo.ApplicationCommandOptionSubCommand, Options: opts}
}

// SubcommandGroup is a subcommand group holding one subcommand.
func SubcommandGroup(name string, sub CommandOption) CommandOption {
	return CommandOption{Name: name, Type: discordgo.ApplicationCommandOptionSubCommandGroup, Options: []CommandOption{sub}}
}

// Focus marks the option as the one being typed, for Autocomplete.
func (o CommandOption) Focus() CommandOption {
	o.Focused = true
	return o
}

func countFocused(opts []CommandOption) int {
	n := 0
	for _, o := range opts {
		if o.Focused {
			n++
		}
		n += countFocused(o.Options)
	}
	return n
}

func optionsJSON(opts []CommandOption) []any {
	out := make([]any, 0, len(opts))
	for _, o := range opts {
		j := map[string]any{"name": o.Name, "type": int(o.Type)}
		switch o.Type {
		case discordgo.ApplicationCommandOptionSubCommand, discordgo.ApplicationCommandOptionSubCommandGroup:
			j["options"] = optionsJSON(o.Options)
		default:
			j["value"] = o.Value
		}
		if o.Focused {
			j["focused"] = true
		}
		out = append(out, j)
	}
	return out
}

// resolvedLocked is the resolved data for user and channel options.
func (s *Server) resolvedLocked(opts []CommandOption, perms string) map[string]any {
	users, members, channels := map[string]any{}, map[string]any{}, map[string]any{}
	var walk func([]CommandOption)
	walk = func(opts []CommandOption) {
		for _, o := range opts {
			walk(o.Options)
			id, _ := o.Value.(string)
			switch o.Type {
			case discordgo.ApplicationCommandOptionUser:
				users[id] = userJSON(s.userLocked(id))
				m := memberJSON(time.Now().Add(-time.Hour))
				m["permissions"] = perms
				members[id] = m
			case discordgo.ApplicationCommandOptionChannel:
				if c := s.channels[id]; c != nil {
					j := map[string]any{"id": c.id, "name": c.name, "type": int(c.typ), "permissions": perms}
					if c.isThread() {
						j["parent_id"] = c.parentID
						j["thread_metadata"] = s.channelJSONLocked(c)["thread_metadata"]
					}
					channels[id] = j
				}
			}
		}
	}
	walk(opts)
	out := map[string]any{}
	if len(users) > 0 {
		out["users"], out["members"] = users, members
	}
	if len(channels) > 0 {
		out["channels"] = channels
	}
	return out
}

// checkOptions reports how given options do not fit a command definition.
func checkOptions(defs []*discordgo.ApplicationCommandOption, given []CommandOption, autocomplete bool) error {
	for _, g := range given {
		i := slices.IndexFunc(defs, func(d *discordgo.ApplicationCommandOption) bool { return d.Name == g.Name })
		if i < 0 {
			return fmt.Errorf("option %q is not defined", g.Name)
		}
		d := defs[i]
		if d.Type != g.Type {
			return fmt.Errorf("option %q: type %d, defined as %d", g.Name, g.Type, d.Type)
		}
		switch g.Type {
		case discordgo.ApplicationCommandOptionSubCommand, discordgo.ApplicationCommandOptionSubCommandGroup:
			if err := checkOptions(d.Options, g.Options, autocomplete); err != nil {
				return fmt.Errorf("%s: %w", g.Name, err)
			}
			continue
		}
		if g.Focused {
			continue // a partial value, typed so far
		}
		if err := checkValue(d, g.Value); err != nil {
			return fmt.Errorf("option %q: %w", g.Name, err)
		}
	}
	subs := 0
	for _, d := range defs {
		present := slices.ContainsFunc(given, func(g CommandOption) bool { return g.Name == d.Name })
		if d.Type == discordgo.ApplicationCommandOptionSubCommand || d.Type == discordgo.ApplicationCommandOptionSubCommandGroup {
			if present {
				subs++
			}
			continue
		}
		if d.Required && !present && !autocomplete {
			return fmt.Errorf("required option %q is missing", d.Name)
		}
	}
	hasSubs := slices.ContainsFunc(defs, func(d *discordgo.ApplicationCommandOption) bool {
		return d.Type == discordgo.ApplicationCommandOptionSubCommand || d.Type == discordgo.ApplicationCommandOptionSubCommandGroup
	})
	if hasSubs && subs != 1 {
		return fmt.Errorf("%d subcommands given, want 1", subs)
	}
	return nil
}

func checkValue(d *discordgo.ApplicationCommandOption, v any) error {
	ok := false
	switch d.Type {
	case discordgo.ApplicationCommandOptionString, discordgo.ApplicationCommandOptionUser,
		discordgo.ApplicationCommandOptionChannel, discordgo.ApplicationCommandOptionRole,
		discordgo.ApplicationCommandOptionMentionable, discordgo.ApplicationCommandOptionAttachment:
		_, ok = v.(string)
	case discordgo.ApplicationCommandOptionInteger:
		switch v.(type) {
		case int, int64:
			ok = true
		}
	case discordgo.ApplicationCommandOptionNumber:
		switch v.(type) {
		case int, int64, float64:
			ok = true
		}
	case discordgo.ApplicationCommandOptionBoolean:
		_, ok = v.(bool)
	}
	if !ok {
		return fmt.Errorf("value %#v does not fit type %d", v, d.Type)
	}
	if len(d.Choices) == 0 {
		return nil
	}
	want, _ := json.Marshal(v)
	for _, c := range d.Choices {
		if got, _ := json.Marshal(c.Value); string(got) == string(want) {
			return nil
		}
	}
	return fmt.Errorf("value %v is not one of the choices", v)
}
