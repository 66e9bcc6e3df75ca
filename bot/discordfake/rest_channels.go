package discordfake

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// getGateway is GET /gateway and GET /gateway/bot.
func (s *Server) getGateway(r *request) (int, any, *apiError) {
	if strings.HasSuffix(r.URL.Path, "/bot") {
		return ok(s.gatewayBotJSON())
	}
	return ok(map[string]any{"url": s.gatewayURL()})
}

// getCurrentUser is GET /users/@me.
func (s *Server) getCurrentUser(*request) (int, any, *apiError) {
	me := userJSON(s.bot)
	me["verified"] = true
	me["mfa_enabled"] = false
	me["flags"] = 0
	return ok(me)
}

// getCurrentUserGuilds is GET /users/@me/guilds: every guild of the
// fake, as partial guilds, honouring limit.
func (s *Server) getCurrentUserGuilds(r *request) (int, any, *apiError) {
	limit := 200
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n >= 1 && n <= 200 {
		limit = n
	}
	out := []any{}
	for _, g := range s.guilds {
		if len(out) == limit {
			break
		}
		out = append(out, map[string]any{"id": g.id, "name": g.name, "icon": nil, "owner": false,
			"permissions": strconv.FormatInt(everyonePermissions, 10), "features": []string{}})
	}
	return ok(out)
}

// getCurrentApplication is GET /applications/@me.
func (s *Server) getCurrentApplication(*request) (int, any, *apiError) {
	return ok(map[string]any{
		"id":                     s.cfg.appID,
		"name":                   s.bot.name,
		"icon":                   nil,
		"description":            "",
		"bot_public":             s.cfg.publicBot,
		"bot_require_code_grant": false,
		"verify_key":             strings.Repeat("0", 64),
		"flags":                  s.applicationFlags(),
		"bot":                    userJSON(s.bot),
		"owner":                  userJSON(s.userLocked(s.human)),
	})
}

// guildOrErrLocked returns the guild named by the path's {g}.
func (s *Server) guildOrErrLocked(r *request) (*guild, *apiError) {
	g := s.guildLocked(r.PathValue("g"))
	if g == nil {
		return nil, errUnknownGuild()
	}
	return g, nil
}

// channelOrErrLocked returns the channel or thread named by the path's {c}.
func (s *Server) channelOrErrLocked(r *request) (*channel, *apiError) {
	c := s.channels[r.PathValue("c")]
	if c == nil {
		return nil, errUnknownChannel()
	}
	return c, nil
}

// getGuild is GET /guilds/{g}.
func (s *Server) getGuild(r *request) (int, any, *apiError) {
	g, e := s.guildOrErrLocked(r)
	if e != nil {
		return fail(e)
	}
	out := s.guildJSONLocked(g)
	for _, k := range []string{"channels", "threads", "members", "voice_states", "presences", "joined_at", "large", "unavailable", "member_count", "stage_instances", "guild_scheduled_events"} {
		delete(out, k)
	}
	return ok(out)
}

// getGuildChannels is GET /guilds/{g}/channels; threads are not listed.
func (s *Server) getGuildChannels(r *request) (int, any, *apiError) {
	g, e := s.guildOrErrLocked(r)
	if e != nil {
		return fail(e)
	}
	out := []any{}
	for _, id := range g.channels {
		out = append(out, s.channelJSONLocked(s.channels[id]))
	}
	return ok(out)
}

// listActiveThreads is GET /guilds/{g}/threads/active.
func (s *Server) listActiveThreads(r *request) (int, any, *apiError) {
	g, e := s.guildOrErrLocked(r)
	if e != nil {
		return fail(e)
	}
	threads, members := []any{}, []any{}
	for _, c := range s.sortedChannelsLocked() {
		if c.guildID != g.id || !c.isThread() || c.archived {
			continue
		}
		j := s.channelJSONLocked(c)
		threads = append(threads, j)
		if member, ok := j["member"]; ok {
			members = append(members, member)
		}
	}
	return ok(map[string]any{"threads": threads, "members": members})
}

// getChannel is GET /channels/{c}.
func (s *Server) getChannel(r *request) (int, any, *apiError) {
	c, e := s.channelOrErrLocked(r)
	if e != nil {
		return fail(e)
	}
	return ok(s.channelJSONLocked(c))
}

// threadRequest is the body of the start-thread routes.
type threadRequest struct {
	Name                string                `json:"name"`
	AutoArchiveDuration int                   `json:"auto_archive_duration"`
	Type                discordgo.ChannelType `json:"type"`
	Invitable           *bool                 `json:"invitable"`
}

func (req *threadRequest) validate() *apiError {
	if n := utf8.RuneCountInString(req.Name); n < 1 || n > 100 {
		return formError("BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.", "name")
	}
	switch req.AutoArchiveDuration {
	case 0:
		req.AutoArchiveDuration = 1440 // the parent's default_auto_archive_duration
	case 60, 1440, 4320, 10080:
	default:
		return formError("BASE_TYPE_CHOICES", "Value must be one of {60, 1440, 4320, 10080}.", "auto_archive_duration")
	}
	return nil
}

// threadParentLocked returns a channel threads may be started in.
func (s *Server) threadParentLocked(id string) (*channel, *apiError) {
	c := s.channels[id]
	if c == nil {
		return nil, errUnknownChannel()
	}
	if c.typ != discordgo.ChannelTypeGuildText && c.typ != discordgo.ChannelTypeGuildNews {
		return nil, errWrongChannelType()
	}
	if s.denied[c.id] {
		return nil, errMissingPermissions()
	}
	return c, nil
}

// newThreadLocked files a thread the bot has joined and dispatches
// THREAD_CREATE.
func (s *Server) newThreadLocked(id string, parent *channel, owner string, req threadRequest) *channel {
	now := time.Now()
	t := &channel{
		id:          id,
		guildID:     parent.guildID,
		name:        req.Name,
		typ:         req.Type,
		parentID:    parent.id,
		ownerID:     owner,
		autoArchive: req.AutoArchiveDuration,
		invitable:   req.Invitable == nil || *req.Invitable,
		created:     now,
		archivedAt:  now,
		botJoined:   owner == s.bot.id,
	}
	s.channels[t.id] = t
	created := s.channelJSONLocked(t)
	created["newly_created"] = true
	s.dispatchLocked("THREAD_CREATE", created)
	return t
}

// startThreadFromMessage is POST /channels/{c}/messages/{m}/threads. The
// thread is public and its id is the message's.
func (s *Server) startThreadFromMessage(r *request) (int, any, *apiError) {
	var req threadRequest
	if e := r.decode(&req); e != nil {
		return fail(e)
	}
	parent, e := s.threadParentLocked(r.PathValue("c"))
	if e != nil {
		return fail(e)
	}
	m := s.messages[r.PathValue("m")]
	if m == nil || m.deleted || m.ephemeral || m.channelID != parent.id {
		return fail(errUnknownMessage())
	}
	if m.threadID != "" {
		return fail(errThreadExists())
	}
	if e := req.validate(); e != nil {
		return fail(e)
	}
	req.Type = discordgo.ChannelTypeGuildPublicThread
	t := s.newThreadLocked(m.id, parent, s.bot.id, req)
	m.threadID = t.id
	s.dispatchLocked("MESSAGE_UPDATE", s.messageJSONLocked(m, true))
	return created(s.channelJSONLocked(t))
}

// startThread is POST /channels/{c}/threads. As on Discord, an omitted
// type makes a PRIVATE thread (12).
func (s *Server) startThread(r *request) (int, any, *apiError) {
	var req threadRequest
	if e := r.decode(&req); e != nil {
		return fail(e)
	}
	switch req.Type {
	case 0:
		req.Type = discordgo.ChannelTypeGuildPrivateThread
	case discordgo.ChannelTypeGuildPublicThread, discordgo.ChannelTypeGuildPrivateThread:
	default:
		return fail(formError("BASE_TYPE_CHOICES", "Value must be one of {11, 12}.", "type"))
	}
	if e := req.validate(); e != nil {
		return fail(e)
	}
	parent, e := s.threadParentLocked(r.PathValue("c"))
	if e != nil {
		return fail(e)
	}
	t := s.newThreadLocked(s.newID(), parent, s.bot.id, req)
	return created(s.channelJSONLocked(t))
}

// joinThread is PUT /channels/{c}/thread-members/@me.
func (s *Server) joinThread(r *request) (int, any, *apiError) {
	c, e := s.channelOrErrLocked(r)
	switch {
	case e != nil:
		return fail(e)
	case !c.isThread():
		return fail(errWrongChannelType())
	case c.archived:
		return fail(errThreadArchived())
	}
	c.botJoined = true
	s.notifyLocked()
	return noContent()
}

// modifyChannel is PATCH /channels/{c}: name and topic for channels;
// name, archived, locked, auto_archive_duration and invitable for threads.
// An archived thread takes no change but being unarchived.
func (s *Server) modifyChannel(r *request) (int, any, *apiError) {
	var req struct {
		Name                *string `json:"name"`
		Archived            *bool   `json:"archived"`
		Locked              *bool   `json:"locked"`
		AutoArchiveDuration *int    `json:"auto_archive_duration"`
		Invitable           *bool   `json:"invitable"`
	}
	if e := r.decode(&req); e != nil {
		return fail(e)
	}
	if req.Name != nil {
		if n := utf8.RuneCountInString(*req.Name); n < 1 || n > 100 {
			return fail(formError("BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.", "name"))
		}
	}
	c, e := s.channelOrErrLocked(r)
	if e != nil {
		return fail(e)
	}
	if !c.isThread() {
		if req.Name != nil {
			c.name = *req.Name
		}
		s.dispatchLocked("CHANNEL_UPDATE", s.channelJSONLocked(c))
		return ok(s.channelJSONLocked(c))
	}
	unarchive := req.Archived != nil && !*req.Archived
	if c.archived && !unarchive && (req.Name != nil || req.AutoArchiveDuration != nil || req.Invitable != nil) {
		return fail(errThreadArchived())
	}
	if req.Name != nil {
		c.name = *req.Name
	}
	if req.Archived != nil && *req.Archived != c.archived {
		c.archived = *req.Archived
		c.archivedAt = time.Now()
	}
	if req.Locked != nil {
		c.locked = *req.Locked
	}
	if req.AutoArchiveDuration != nil {
		c.autoArchive = *req.AutoArchiveDuration
	}
	if req.Invitable != nil {
		c.invitable = *req.Invitable
	}
	s.dispatchLocked("THREAD_UPDATE", s.channelJSONLocked(c))
	return ok(s.channelJSONLocked(c))
}

// triggerTyping is POST /channels/{c}/typing.
func (s *Server) triggerTyping(r *request) (int, any, *apiError) {
	c, e := s.channelOrErrLocked(r)
	if e != nil {
		return fail(e)
	}
	if s.denied[c.id] || (c.isThread() && s.denied[c.parentID]) {
		return fail(errMissingPermissions())
	}
	s.typing[c.id]++
	s.notifyLocked()
	return noContent()
}
