package metrics

import "sync"

// otherRole is the role label of names past the bound.
const otherRole = "other"

// roleLabels bounds the values of the role label. Role names come from
// the operator (the roles file, the built-in roles), from server admins
// (/roles set, per channel) and from the master's model (replan): the
// last two are not bounded, so only the operator's names are labelled
// by name always, the first max others too, and every later one is
// "other".
type roleLabels struct {
	mu     sync.Mutex
	known  map[string]bool
	others map[string]bool
	max    int
}

func newRoleLabels(configured []string, max int) *roleLabels {
	if max <= 0 {
		max = 20
	}
	l := &roleLabels{known: map[string]bool{}, others: map[string]bool{}, max: max}
	for _, n := range configured {
		l.known[n] = true
	}
	return l
}

// label is the role label of a role name.
func (l *roleLabels) label(role string) string {
	if role == "" {
		return otherRole
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.known[role], l.others[role]:
		return role
	case len(l.others) < l.max:
		l.others[role] = true
		return role
	}
	return otherRole
}
