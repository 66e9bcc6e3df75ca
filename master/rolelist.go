package master

import (
	"fmt"
)

// RosterLine says in one line what a team started in a channel gets:
// the roles of the first layer and where they come from.
func RosterLine(layers []RoleLayer) string {
	names := make([]string, len(layers[0].Roles))
	for i, e := range layers[0].Roles {
		names[i] = e.Name
	}
	return Truncate(fmt.Sprintf("%s (from %s)", quoteNames(names), layers[0].Label()), 600)
}
