package discordtest

import (
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// getGateway is GET /gateway and GET /gateway/bot.
func (s *Server) getGateway(w http.ResponseWriter, r *http.Request) {
	out := map[string]any{"url": s.gatewayURL()}
	if strings.HasSuffix(r.URL.Path, "/bot") {
		out["shards"] = 1
		out["session_start_limit"] = map[string]any{"total": 1000, "remaining": 999, "reset_after": 14400000, "max_concurrency": 1}
	}
	writeJSON(w, http.StatusOK, out)
}

// getCurrentUser is GET /users/@me.
func (s *Server) getCurrentUser(w http.ResponseWriter, _ *http.Request) {
	me := userJSON(s.bot)
	me["verified"] = true
	me["mfa_enabled"] = false
	me["flags"] = 0
	writeJSON(w, http.StatusOK, me)
}

// getCurrentApplication is GET /applications/@me.
func (s *Server) getCurrentApplication(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	flags := 1<<13 | 1<<15 | 1<<19 // GATEWAY_GUILD_MEMBERS_LIMITED, _PRESENCE_LIMITED, _MESSAGE_CONTENT_LIMITED
	if s.cfg.noPrivileged {
		flags = 0
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id":                     s.cfg.appID,
		"name":                   s.bot.name,
		"icon":                   nil,
		"description":            "",
		"bot_public":             false,
		"bot_require_code_grant": false,
		"verify_key":             strings.Repeat("0", 64),
		"flags":                  flags,
		"bot":                    userJSON(s.bot),
		"owner":                  userJSON(s.userLocked(s.human)),
	})
}

// getGuild is GET /guilds/{g}.
func (s *Server) getGuild(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guildLocked(r.PathValue("g"))
	if g == nil {
		writeError(w, errUnknownGuild())
		return
	}
	out := s.guildJSONLocked(g)
	for _, k := range []string{"channels", "threads", "members", "voice_states", "presences", "joined_at", "large", "unavailable", "member_count", "stage_instances", "guild_scheduled_events"} {
		delete(out, k)
	}
	writeJSON(w, http.StatusOK, out)
}

// getGuildChannels is GET /guilds/{g}/channels; threads are not listed.
func (s *Server) getGuildChannels(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guildLocked(r.PathValue("g"))
	if g == nil {
		writeError(w, errUnknownGuild())
		return
	}
	out := []any{}
	for _, id := range g.channels {
		out = append(out, s.channelJSONLocked(s.channels[id]))
	}
	writeJSON(w, http.StatusOK, out)
}

// listActiveThreads is GET /guilds/{g}/threads/active.
func (s *Server) listActiveThreads(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.guildLocked(r.PathValue("g"))
	if g == nil {
		writeError(w, errUnknownGuild())
		return
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
	writeJSON(w, http.StatusOK, map[string]any{"threads": threads, "members": members})
}

// getChannel is GET /channels/{c}.
func (s *Server) getChannel(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channels[r.PathValue("c")]
	if c == nil {
		writeError(w, errUnknownChannel())
		return
	}
	writeJSON(w, http.StatusOK, s.channelJSONLocked(c))
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
func (s *Server) startThreadFromMessage(w http.ResponseWriter, r *http.Request) {
	var req threadRequest
	if e := s.readJSON(r, &req); e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	parent, e := s.threadParentLocked(r.PathValue("c"))
	if e != nil {
		writeError(w, e)
		return
	}
	m := s.messages[r.PathValue("m")]
	if m == nil || m.deleted || m.ephemeral || m.channelID != parent.id {
		writeError(w, errUnknownMessage())
		return
	}
	if m.threadID != "" {
		writeError(w, errThreadExists())
		return
	}
	if e := req.validate(); e != nil {
		writeError(w, e)
		return
	}
	req.Type = discordgo.ChannelTypeGuildPublicThread
	t := s.newThreadLocked(m.id, parent, s.bot.id, req)
	m.threadID = t.id
	s.dispatchLocked("MESSAGE_UPDATE", s.messageJSONLocked(m, true))
	writeJSON(w, http.StatusCreated, s.channelJSONLocked(t))
}

// startThread is POST /channels/{c}/threads. As on Discord, an omitted
// type makes a PRIVATE thread (12).
func (s *Server) startThread(w http.ResponseWriter, r *http.Request) {
	var req threadRequest
	if e := s.readJSON(r, &req); e != nil {
		writeError(w, e)
		return
	}
	switch req.Type {
	case 0:
		req.Type = discordgo.ChannelTypeGuildPrivateThread
	case discordgo.ChannelTypeGuildPublicThread, discordgo.ChannelTypeGuildPrivateThread:
	default:
		writeError(w, formError("BASE_TYPE_CHOICES", "Value must be one of {11, 12}.", "type"))
		return
	}
	if e := req.validate(); e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	parent, e := s.threadParentLocked(r.PathValue("c"))
	if e != nil {
		writeError(w, e)
		return
	}
	t := s.newThreadLocked(s.newID(), parent, s.bot.id, req)
	writeJSON(w, http.StatusCreated, s.channelJSONLocked(t))
}

// joinThread is PUT /channels/{c}/thread-members/@me.
func (s *Server) joinThread(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channels[r.PathValue("c")]
	switch {
	case c == nil:
		writeError(w, errUnknownChannel())
	case !c.isThread():
		writeError(w, errWrongChannelType())
	case c.archived:
		writeError(w, errThreadArchived())
	default:
		c.botJoined = true
		s.notifyLocked()
		w.WriteHeader(http.StatusNoContent)
	}
}

// modifyChannel is PATCH /channels/{c}: name and topic for channels;
// name, archived, locked, auto_archive_duration and invitable for threads.
// An archived thread takes no change but being unarchived.
func (s *Server) modifyChannel(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name                *string `json:"name"`
		Archived            *bool   `json:"archived"`
		Locked              *bool   `json:"locked"`
		AutoArchiveDuration *int    `json:"auto_archive_duration"`
		Invitable           *bool   `json:"invitable"`
	}
	if e := s.readJSON(r, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Name != nil {
		if n := utf8.RuneCountInString(*req.Name); n < 1 || n > 100 {
			writeError(w, formError("BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.", "name"))
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channels[r.PathValue("c")]
	if c == nil {
		writeError(w, errUnknownChannel())
		return
	}
	if !c.isThread() {
		if req.Name != nil {
			c.name = *req.Name
		}
		s.dispatchLocked("CHANNEL_UPDATE", s.channelJSONLocked(c))
		writeJSON(w, http.StatusOK, s.channelJSONLocked(c))
		return
	}
	unarchive := req.Archived != nil && !*req.Archived
	if c.archived && !unarchive && (req.Name != nil || req.AutoArchiveDuration != nil || req.Invitable != nil) {
		writeError(w, errThreadArchived())
		return
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
	writeJSON(w, http.StatusOK, s.channelJSONLocked(c))
}

// triggerTyping is POST /channels/{c}/typing.
func (s *Server) triggerTyping(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channels[r.PathValue("c")]
	if c == nil {
		writeError(w, errUnknownChannel())
		return
	}
	if s.denied[c.id] || (c.isThread() && s.denied[c.parentID]) {
		writeError(w, errMissingPermissions())
		return
	}
	s.typing[c.id]++
	s.notifyLocked()
	w.WriteHeader(http.StatusNoContent)
}

// readJSON decodes a JSON request body.
func (s *Server) readJSON(r *http.Request, v any) *apiError {
	body, _, e := readPayload(r)
	if e != nil {
		return e
	}
	return decode(body, v)
}
