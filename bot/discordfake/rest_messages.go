package discordfake

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"
)

// createMessage is POST /channels/{c}/messages.
//
// Unlike Discord, which unarchives an unlocked archived thread when a
// message is posted to it, the server answers 50083 for every archived
// thread, so the bot's recovery path gets exercised.
func (s *Server) createMessage(r *request) (int, any, *apiError) {
	mb, e := r.message()
	if e != nil {
		return fail(e)
	}
	c, e := s.writableChannelLocked(r.PathValue("c"))
	if e != nil {
		return fail(e)
	}
	nonce, e := mb.nonce()
	if e != nil {
		return fail(e)
	}
	key := c.id + "\x00" + nonce
	if prev := s.nonces[key]; prev != nil && mb.EnforceNonce {
		return ok(s.messageJSONLocked(prev, true))
	}
	if !mb.nonEmpty(len(r.files)) {
		return fail(errEmptyMessage())
	}
	if e := validateMessage(mb.content(), mb.Embeds, mb.Components, mb.Flags); e != nil {
		return fail(e)
	}
	if e := s.checkReferenceLocked(c, mb); e != nil {
		return fail(e)
	}

	m := s.newMessageLocked(c, s.bot, mb, r.files)
	m.nonce, m.enforce = nonce, mb.EnforceNonce
	if nonce != "" {
		s.nonces[key] = m
	}
	s.storeLocked(m)
	s.dispatchLocked("MESSAGE_CREATE", s.messageJSONLocked(m, true))
	return ok(s.messageJSONLocked(m, true))
}

// writableChannelLocked returns the channel the bot wants to post in, or
// why it may not.
func (s *Server) writableChannelLocked(id string) (*channel, *apiError) {
	c := s.channels[id]
	if c == nil {
		return nil, errUnknownChannel()
	}
	if s.denied[c.id] || (c.isThread() && s.denied[c.parentID]) {
		return nil, errMissingPermissions()
	}
	if c.isThread() && c.archived {
		return nil, errThreadArchived()
	}
	return c, nil
}

// checkReferenceLocked drops or rejects a reply to a message that does not
// exist, depending on fail_if_not_exists (true when absent).
func (s *Server) checkReferenceLocked(c *channel, mb *messageBody) *apiError {
	if mb.Reference == nil {
		return nil
	}
	ref := s.messages[mb.Reference.MessageID]
	if ref != nil && !ref.deleted && !ref.ephemeral && ref.channelID == cmp.Or(mb.Reference.ChannelID, c.id) {
		return nil
	}
	if f := mb.Reference.FailIfNotExists; f == nil || *f {
		return formError("MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message", "message_reference")
	}
	mb.Reference = nil
	return nil
}

// newMessageLocked builds a message from a body; storeLocked files it.
func (s *Server) newMessageLocked(c *channel, author user, mb *messageBody, files []Attachment) *message {
	m := &message{
		id:         s.newID(),
		channelID:  c.id,
		guildID:    c.guildID,
		author:     author,
		typ:        discordgo.MessageTypeDefault,
		content:    mb.content(),
		embeds:     mb.Embeds,
		components: mb.Components,
		allowed:    mb.AllowedMentions,
		flags:      mb.Flags & (discordgo.MessageFlagsSuppressEmbeds | discordgo.MessageFlagsIsComponentsV2),
		created:    time.Now(),
	}
	for _, f := range files {
		m.attachments = append(m.attachments, s.newAttachmentLocked(m, f))
	}
	if mb.Reference != nil {
		ref := *mb.Reference
		ref.ChannelID = cmp.Or(ref.ChannelID, c.id)
		ref.GuildID = cmp.Or(ref.GuildID, c.guildID)
		m.ref = &ref
		m.typ = discordgo.MessageTypeReply
	}
	return m
}

func (s *Server) storeLocked(m *message) {
	s.messages[m.id] = m
	if m.ephemeral {
		return
	}
	s.byChan[m.channelID] = append(s.byChan[m.channelID], m)
	if c := s.channels[m.channelID]; c != nil {
		c.lastMsgID = m.id
		if c.isThread() {
			c.msgCount++
			if m.author.id == s.bot.id {
				c.botJoined = true
			}
		}
	}
}

// attachmentRef is an attachment kept by an edit.
type attachmentRef struct {
	ID string `json:"id"`
}

// applyEditLocked edits m with the keys present in mb.
func (s *Server) applyEditLocked(m *message, mb *messageBody, files []Attachment) *apiError {
	content, embeds, components := m.content, m.embeds, m.components
	if mb.has("content") {
		content = mb.content()
	}
	if mb.has("embeds") {
		embeds = mb.Embeds
	}
	if mb.has("components") {
		components = mb.Components
	}
	if e := validateMessage(content, embeds, components, m.flags|mb.Flags); e != nil {
		return e
	}
	attachments := m.attachments
	if mb.has("attachments") {
		var keep []attachmentRef
		_ = decode(mb.present["attachments"], &keep)
		attachments = nil
		for _, a := range m.attachments {
			if slices.Contains(keep, attachmentRef{ID: a.ID}) {
				attachments = append(attachments, a)
			}
		}
	}
	if content == "" && len(embeds) == 0 && len(components) == 0 && len(attachments)+len(files) == 0 {
		return errEmptyMessage()
	}
	for _, f := range files {
		attachments = append(attachments, s.newAttachmentLocked(m, f))
	}
	m.history = append(m.history, m.content)
	m.content, m.embeds, m.components, m.attachments = content, embeds, components, attachments
	if mb.has("allowed_mentions") {
		m.allowed = mb.AllowedMentions
	}
	if mb.has("flags") {
		m.flags = m.flags&^discordgo.MessageFlagsSuppressEmbeds | mb.Flags&discordgo.MessageFlagsSuppressEmbeds
	}
	m.edited = time.Now()
	return nil
}

// channelMessageLocked finds a visible message in a channel.
func (s *Server) channelMessageLocked(r *request) (*channel, *message, *apiError) {
	c := s.channels[r.PathValue("c")]
	if c == nil {
		return nil, nil, errUnknownChannel()
	}
	m := s.messages[r.PathValue("m")]
	if m == nil || m.deleted || m.ephemeral || m.channelID != c.id {
		return c, nil, errUnknownMessage()
	}
	return c, m, nil
}

// getMessage is GET /channels/{c}/messages/{m}.
func (s *Server) getMessage(r *request) (int, any, *apiError) {
	_, m, e := s.channelMessageLocked(r)
	if e != nil {
		return fail(e)
	}
	return ok(s.restMessageJSONLocked(m))
}

func snowflake(id string) int64 {
	n, _ := strconv.ParseInt(id, 10, 64)
	return n
}

// editMessage is PATCH /channels/{c}/messages/{m}.
func (s *Server) editMessage(r *request) (int, any, *apiError) {
	mb, e := r.message()
	if e != nil {
		return fail(e)
	}
	c, m, e := s.channelMessageLocked(r)
	if e != nil {
		return fail(e)
	}
	if m.author.id != s.bot.id {
		return fail(errNotAuthor())
	}
	if c.isThread() && c.archived {
		return fail(errThreadArchived())
	}
	if e := s.applyEditLocked(m, mb, r.files); e != nil {
		return fail(e)
	}
	s.dispatchLocked("MESSAGE_UPDATE", s.messageJSONLocked(m, true))
	return ok(s.messageJSONLocked(m, true))
}

// deleteMessage is DELETE /channels/{c}/messages/{m}. The bot lacks
// MANAGE_MESSAGES, so it may delete only its own messages.
func (s *Server) deleteMessage(r *request) (int, any, *apiError) {
	c, m, e := s.channelMessageLocked(r)
	if e != nil {
		return fail(e)
	}
	if m.author.id != s.bot.id {
		return fail(errMissingPermissions())
	}
	if c.isThread() && c.archived {
		return fail(errThreadArchived())
	}
	s.deleteLocked(m)
	return noContent()
}

func (s *Server) deleteLocked(m *message) {
	m.deleted = true
	if m.ephemeral {
		s.notifyLocked()
		return
	}
	s.dispatchLocked("MESSAGE_DELETE", map[string]any{"id": m.id, "channel_id": m.channelID, "guild_id": m.guildID})
}
