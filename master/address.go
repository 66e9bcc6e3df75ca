package master

import (
	"fmt"
	"strings"
)

// addressCandidate is the role name a message may be addressed to: the
// word after a leading "@", or a leading word followed by ":"; "" when
// the message starts with neither. It does not know the team.
func addressCandidate(content string) string {
	s := strings.TrimSpace(content)
	at := strings.HasPrefix(s, "@")
	s = strings.TrimPrefix(s, "@")
	end := strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	})
	if end < 0 {
		end = len(s)
	}
	name, rest := strings.ToLower(s[:end]), s[end:]
	if name == "" || (!at && !strings.HasPrefix(rest, ":")) {
		return ""
	}
	return name
}

// Addressee is the role of the roster a message is addressed to, when it
// starts with "@<role>" or "<role>:" (any case); "" otherwise. The
// message still goes to the master, which is told to delegate to that
// role unless it has a reason not to.
func Addressee(content string, roster []Role) string {
	name := addressCandidate(content)
	if name == "" {
		return ""
	}
	for _, r := range roster {
		if strings.EqualFold(r.Name, name) {
			return r.Name
		}
	}
	return ""
}

// addressedNote is what the master is told about a message addressed to
// a role of its team; "" when the role has left it.
func addressedNote(role string, roster []Role) string {
	for _, r := range roster {
		if r.Name == role {
			return fmt.Sprintf("The user addressed this message to %s: delegate it to %s unless you have a reason not to "+
				"(then say why in your reply).", role, role)
		}
	}
	return ""
}

// AddressingHelp is the line that tells people how to address a role.
func AddressingHelp(roster []Role) string {
	example := "planner"
	if len(roster) > 0 {
		example = roster[0].Name
	}
	return fmt.Sprintf("Start a message with `@%s` or `%s:` to address a member: the coordinator still reads it first, "+
		"and hands it to that member unless it has a reason not to.", example, example)
}
