package bot

import (
	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// rolesPickOption is /callon's optional subset of the channel's roster.
var rolesPickOption = &discordgo.ApplicationCommandOption{
	Type:         discordgo.ApplicationCommandOptionString,
	Name:         "roles",
	Description:  "Only these roles of the channel's roster, comma-separated (default: all of them)",
	Autocomplete: true,
	MaxLength:    1000,
}

// pickedRoles is the roles /callon asked for; nil for the whole roster.
func pickedRoles(i *discordgo.InteractionCreate) []string {
	if o := option(i, "roles"); o != nil {
		return master.ParseRoleNames(o.StringValue())
	}
	return nil
}
