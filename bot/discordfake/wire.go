package discordfake

import (
	"cmp"
	"encoding/json"
	"regexp"
	"time"

	"github.com/bwmarrin/discordgo"
)

// The JSON shapes Discord sends, written out by hand from the API docs
// rather than by marshalling discordgo's structs, so that a discordgo
// assumption that does not hold on the wire shows up in tests.

// botPermissions is what the bot may do in a channel it is not denied
// (Manage Webhooks too, until DenyWebhooks).
const botPermissions = discordgo.PermissionManageWebhooks |
	discordgo.PermissionViewChannel |
	discordgo.PermissionSendMessages |
	discordgo.PermissionSendMessagesInThreads |
	discordgo.PermissionCreatePublicThreads |
	discordgo.PermissionCreatePrivateThreads |
	discordgo.PermissionReadMessageHistory |
	discordgo.PermissionEmbedLinks |
	discordgo.PermissionAttachFiles |
	discordgo.PermissionAddReactions |
	discordgo.PermissionManageThreads |
	discordgo.PermissionUseApplicationCommands

// everyonePermissions are the @everyone role's permissions.
const everyonePermissions = discordgo.PermissionViewChannel |
	discordgo.PermissionSendMessages |
	discordgo.PermissionSendMessagesInThreads |
	discordgo.PermissionCreatePublicThreads |
	discordgo.PermissionReadMessageHistory |
	discordgo.PermissionUseApplicationCommands

var mentionRE = regexp.MustCompile(`<@!?(\d+)>`)

func stamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000-07:00")
}

func stampOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return stamp(t)
}

func userJSON(u user) map[string]any {
	m := map[string]any{
		"id":            u.id,
		"username":      u.name,
		"global_name":   u.name,
		"discriminator": "0",
		"avatar":        nil,
		"public_flags":  0,
	}
	if u.bot {
		m["bot"] = true
	}
	return m
}

func memberJSON(joined time.Time) map[string]any {
	return map[string]any{
		"nick":      nil,
		"avatar":    nil,
		"roles":     []string{},
		"joined_at": stamp(joined),
		"deaf":      false,
		"mute":      false,
		"flags":     0,
		"pending":   false,
	}
}

func (s *Server) guildLocked(id string) *guild {
	for _, g := range s.guilds {
		if g.id == id {
			return g
		}
	}
	return nil
}

func (s *Server) channelJSONLocked(c *channel) map[string]any {
	m := map[string]any{
		"id":                    c.id,
		"type":                  int(c.typ),
		"guild_id":              c.guildID,
		"name":                  c.name,
		"last_message_id":       nilIfEmpty(c.lastMsgID),
		"rate_limit_per_user":   0,
		"flags":                 0,
		"nsfw":                  false,
		"permission_overwrites": overwritesJSON(c.overwrites),
	}
	if !c.isThread() {
		m["position"] = c.position
		m["parent_id"] = nil
		m["topic"] = nil
		m["default_auto_archive_duration"] = 1440
		return m
	}
	m["parent_id"] = c.parentID
	m["owner_id"] = c.ownerID
	m["message_count"] = c.msgCount
	m["total_message_sent"] = c.msgCount
	m["member_count"] = 1
	md := map[string]any{
		"archived":              c.archived,
		"auto_archive_duration": c.autoArchive,
		"archive_timestamp":     stamp(c.archivedAt),
		"locked":                c.locked,
		"create_timestamp":      stamp(c.created),
	}
	if c.typ == discordgo.ChannelTypeGuildPrivateThread {
		md["invitable"] = c.invitable
	}
	m["thread_metadata"] = md
	if c.botJoined {
		m["member"] = map[string]any{
			"id":             c.id,
			"user_id":        s.bot.id,
			"join_timestamp": stamp(c.created),
			"flags":          0,
		}
	}
	return m
}

func (s *Server) guildJSONLocked(g *guild) map[string]any {
	var channels, threads []any
	for _, id := range g.channels {
		channels = append(channels, s.channelJSONLocked(s.channels[id]))
	}
	for _, c := range s.channels {
		if c.guildID == g.id && c.isThread() && !c.archived {
			threads = append(threads, s.channelJSONLocked(c))
		}
	}
	botMember := memberJSON(g.created)
	botMember["user"] = userJSON(s.bot)
	return map[string]any{
		"id":                     g.id,
		"name":                   g.name,
		"icon":                   nil,
		"owner_id":               s.human,
		"joined_at":              stamp(g.created),
		"large":                  false,
		"unavailable":            false,
		"member_count":           2,
		"preferred_locale":       "en-US",
		"verification_level":     0,
		"premium_tier":           0,
		"features":               []string{},
		"emojis":                 []any{},
		"stickers":               []any{},
		"roles":                  s.rolesJSONLocked(g),
		"channels":               orEmpty(channels),
		"threads":                orEmpty(threads),
		"members":                []any{botMember},
		"voice_states":           []any{},
		"presences":              []any{},
		"stage_instances":        []any{},
		"guild_scheduled_events": []any{},
	}
}

// messageJSONLocked is the message object of REST replies and of
// MESSAGE_CREATE and MESSAGE_UPDATE.
func (s *Server) messageJSONLocked(m *message, withReferenced bool) map[string]any {
	mentions := []any{}
	for _, sub := range mentionRE.FindAllStringSubmatch(m.content, -1) {
		if u, ok := s.users[sub[1]]; ok {
			mentions = append(mentions, userJSON(u))
		}
	}
	out := map[string]any{
		"id":               m.id,
		"type":             int(m.typ),
		"channel_id":       m.channelID,
		"guild_id":         m.guildID,
		"author":           userJSON(m.author),
		"content":          m.content,
		"timestamp":        stamp(m.created),
		"edited_timestamp": stampOrNil(m.edited),
		"tts":              false,
		"mention_everyone": false,
		"mentions":         mentions,
		"mention_roles":    []string{},
		"attachments":      s.attachmentsJSON(m),
		"embeds":           rawOrEmpty(m.embeds),
		"components":       rawOrEmpty(m.components),
		"reactions":        s.reactionsJSON(m),
		"pinned":           false,
		"flags":            int(m.flags),
	}
	if m.webhookID != "" {
		out["webhook_id"] = m.webhookID
		out["application_id"] = s.cfg.appID
	} else {
		out["member"] = s.guildMemberJSONLocked(m.guildID, m.author.id, time.Now())
	}
	if m.nonce != "" {
		out["nonce"] = m.nonce
	}
	if m.ref != nil {
		out["message_reference"] = map[string]any{
			"type":       0,
			"message_id": m.ref.MessageID,
			"channel_id": cmp.Or(m.ref.ChannelID, m.channelID),
			"guild_id":   cmp.Or(m.ref.GuildID, m.guildID),
		}
		if withReferenced {
			if ref, ok := s.messages[m.ref.MessageID]; ok && !ref.deleted {
				out["referenced_message"] = s.messageJSONLocked(ref, false)
			} else {
				out["referenced_message"] = nil
			}
		}
	}
	if m.ix != nil {
		out["interaction_metadata"] = interactionMetadataJSON(m.ix)
		if m.ix.typ == discordgo.InteractionApplicationCommand {
			out["interaction"] = map[string]any{
				"id":   m.ix.id,
				"type": int(m.ix.typ),
				"name": m.ix.name,
				"user": userJSON(m.ix.user),
			}
		}
	}
	if m.threadID != "" {
		if t, ok := s.channels[m.threadID]; ok {
			out["thread"] = s.channelJSONLocked(t)
		}
	}
	return out
}

// interactionMetadataJSON is the interaction_metadata of a message
// answering ix.
func interactionMetadataJSON(ix *interaction) map[string]any {
	md := map[string]any{
		"id":                             ix.id,
		"type":                           int(ix.typ),
		"user":                           userJSON(ix.user),
		"authorizing_integration_owners": map[string]string{"0": ix.guildID},
	}
	switch ix.typ {
	case discordgo.InteractionApplicationCommand:
		md["name"] = ix.name
	case discordgo.InteractionMessageComponent:
		md["interacted_message_id"] = ix.message.id
	case discordgo.InteractionModalSubmit:
		md["triggering_interaction_metadata"] = interactionMetadataJSON(ix.opener)
	}
	return md
}

func (s *Server) attachmentsJSON(m *message) []any {
	out := []any{}
	for _, a := range m.attachments {
		out = append(out, map[string]any{
			"id":           a.ID,
			"filename":     a.Filename,
			"size":         len(a.Data),
			"url":          a.URL,
			"proxy_url":    a.ProxyURL,
			"content_type": a.ContentType,
		})
	}
	return out
}

// restMessageJSONLocked is a message as REST returns it: when
// MESSAGE_CONTENT is not enabled in the Developer Portal, others'
// messages come without their content, as over the gateway.
func (s *Server) restMessageJSONLocked(m *message) map[string]any {
	out := s.messageJSONLocked(m, true)
	if s.cfg.privileged&discordgo.IntentMessageContent == 0 && !s.contentVisible(out) {
		return withoutContent(out)
	}
	return out
}

// withoutContent strips what a bot lacking the MESSAGE_CONTENT intent does
// not receive.
func withoutContent(msg map[string]any) map[string]any {
	out := make(map[string]any, len(msg))
	for k, v := range msg {
		out[k] = v
	}
	out["content"] = ""
	out["embeds"] = []any{}
	out["attachments"] = []any{}
	out["components"] = []any{}
	delete(out, "poll")
	return out
}

func rawOrEmpty(raws []json.RawMessage) any {
	if len(raws) == 0 {
		return []any{}
	}
	return raws
}

func orEmpty(v []any) []any {
	if v == nil {
		return []any{}
	}
	return v
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
