package master

import (
	"fmt"
	"slices"
	"strings"
)

// ParseRoleNames splits what a person typed as a list of role names
// ("researcher, writer") into names: trimmed, lowercased, without
// duplicates, in the order typed.
func ParseRoleNames(s string) []string {
	var names []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
		name := strings.ToLower(strings.TrimSpace(f))
		if name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// PickRoles returns the roles of roster named in names, in roster order.
// A name the roster lacks is a *RoleError listing the available ones.
func PickRoles(roster []Role, names []string) ([]Role, error) {
	var unknown []string
	for _, n := range names {
		if !slices.ContainsFunc(roster, func(r Role) bool { return r.Name == n }) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		noun := "role"
		if len(unknown) > 1 {
			noun = "roles"
		}
		return nil, roleErrorf("this channel has no %s %s; available: %s", noun, quoteNames(unknown), quoteNames(RoleNames(roster)))
	}
	var picked []Role
	for _, r := range roster {
		if slices.Contains(names, r.Name) {
			picked = append(picked, r)
		}
	}
	if len(picked) == 0 {
		return nil, roleErrorf("no roles picked; available: %s", quoteNames(RoleNames(roster)))
	}
	return picked, nil
}

// quoteNames is names as `a`, `b`, for messages.
func quoteNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("`%s`", n)
	}
	return strings.Join(q, ", ")
}
