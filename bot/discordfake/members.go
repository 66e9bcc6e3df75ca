package discordfake

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Roles, members and permission overwrites, for bots that compute a
// member's permissions themselves. Every user is a member of every guild
// (the bot with a managed role of its own holding its invite's
// permissions, as Discord gives a bot invited with permissions);
// the default user owns them all, so a test about permissions acts as
// another user (AddUser).

type role struct {
	id    string
	name  string
	perms int64
}

// Overwrite is a channel's permission overwrite for a role (the guild's
// id names @everyone) or, with Member set, for one member.
type Overwrite struct {
	ID     string
	Member bool
	Allow  int64
	Deny   int64
}

// AddRole creates a role with the given permissions in a guild and
// returns its id. It dispatches nothing: a bot reading roles from the
// gateway cache does not see it.
func (s *Server) AddRole(guildID, name string, permissions int64) string {
	id := s.newID()
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guildLocked(guildID)
	if g == nil {
		panic(fmt.Sprintf("discordtest: no guild %q", guildID))
	}
	g.roles = append(g.roles, role{id: id, name: name, perms: permissions})
	s.notifyLocked()
	return id
}

// SetMemberRoles gives a user exactly these roles in a guild; they show
// in the member objects of the user's messages and interactions and of
// GET /guilds/{g}/members/{u}.
func (s *Server) SetMemberRoles(guildID, userID string, roleIDs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guildLocked(guildID)
	if g == nil {
		panic(fmt.Sprintf("discordtest: no guild %q", guildID))
	}
	for _, id := range roleIDs {
		if !slices.ContainsFunc(g.roles, func(r role) bool { return r.id == id }) {
			panic(fmt.Sprintf("discordtest: no role %q in guild %q", id, guildID))
		}
	}
	if g.members == nil {
		g.members = map[string][]string{}
	}
	g.members[userID] = slices.Clone(roleIDs)
	s.notifyLocked()
}

// SetOverwrite sets a permission overwrite on a channel, replacing the
// one for the same role or member. It dispatches nothing.
func (s *Server) SetOverwrite(channelID string, o Overwrite) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channels[channelID]
	if c == nil {
		panic(fmt.Sprintf("discordtest: no channel %q", channelID))
	}
	c.overwrites = slices.DeleteFunc(c.overwrites, func(x Overwrite) bool { return x.ID == o.ID })
	c.overwrites = append(c.overwrites, o)
	s.notifyLocked()
}

// memberRolesLocked is a user's roles in a guild: the bot has its own
// managed role besides those SetMemberRoles gives it.
func (s *Server) memberRolesLocked(guildID, userID string) []string {
	g := s.guildLocked(guildID)
	if g == nil {
		return nil
	}
	roles := slices.Clone(g.members[userID])
	if userID == s.bot.id {
		roles = append([]string{g.botRole}, roles...)
	}
	return roles
}

// guildMemberJSONLocked is the member object of a user in a guild.
func (s *Server) guildMemberJSONLocked(guildID, userID string, joined time.Time) map[string]any {
	m := memberJSON(joined)
	if roles := s.memberRolesLocked(guildID, userID); len(roles) > 0 {
		m["roles"] = roles
	}
	return m
}

func (s *Server) rolesJSONLocked(g *guild) []any {
	out := []any{roleJSON(role{id: g.id, name: "@everyone", perms: everyonePermissions}, 0)}
	bot := roleJSON(role{id: g.botRole, name: s.bot.name, perms: botPermissions}, 1)
	bot["managed"] = true
	bot["tags"] = map[string]any{"bot_id": s.bot.id}
	out = append(out, bot)
	for i, r := range g.roles {
		out = append(out, roleJSON(r, i+2))
	}
	return out
}

func roleJSON(r role, position int) map[string]any {
	return map[string]any{
		"id": r.id, "name": r.name, "permissions": strconv.FormatInt(r.perms, 10),
		"position": position, "color": 0, "hoist": false, "managed": false, "mentionable": false, "flags": 0,
	}
}

func overwritesJSON(os []Overwrite) []any {
	out := []any{}
	for _, o := range os {
		typ := discordgo.PermissionOverwriteTypeRole
		if o.Member {
			typ = discordgo.PermissionOverwriteTypeMember
		}
		out = append(out, map[string]any{"id": o.ID, "type": int(typ),
			"allow": strconv.FormatInt(o.Allow, 10), "deny": strconv.FormatInt(o.Deny, 10)})
	}
	return out
}

// getGuildMember is GET /guilds/{g}/members/{u}.
func (s *Server) getGuildMember(r *request) (int, any, *apiError) {
	g, e := s.guildOrErrLocked(r)
	if e != nil {
		return fail(e)
	}
	u, known := s.users[r.PathValue("u")]
	if !known {
		return fail(&apiError{status: 404, Code: 10007, Message: "Unknown Member"})
	}
	m := s.guildMemberJSONLocked(g.id, u.id, g.created)
	m["user"] = userJSON(u)
	return ok(m)
}
