package discordfake

import (
	"time"

	"github.com/bwmarrin/discordgo"
)

// interactionMessageLocked files a message answering ix.
func (s *Server) interactionMessageLocked(ix *interaction, mb *messageBody, files []Attachment, ephemeral bool) *message {
	mb.Reference = nil
	if ix.message != nil {
		// An answer to a component (or to a modal a component opened)
		// is a reply to the component's message.
		mb.Reference = &discordgo.MessageReference{MessageID: ix.message.id}
	}
	m := s.newMessageLocked(s.channels[ix.channelID], s.bot, mb, files)
	if m.ref == nil {
		m.typ = discordgo.MessageTypeChatInputCommand
	}
	m.webhookID = s.cfg.appID
	m.ix = ix
	m.ephemeral = ephemeral
	if ephemeral {
		m.flags |= discordgo.MessageFlagsEphemeral
	}
	s.storeLocked(m)
	return m
}

// webhookInteractionLocked finds the interaction a webhook token belongs
// to. The token works once the interaction is acknowledged, until it
// expires.
func (s *Server) webhookInteractionLocked(r *request) (*interaction, *apiError) {
	ix := s.ixByToken[r.PathValue("token")]
	if r.PathValue("app") != s.cfg.appID || ix == nil {
		return nil, errUnknownWebhook()
	}
	if time.Now().After(ix.tokenExpiry) {
		return nil, errInvalidWebhookToken()
	}
	if !ix.acked {
		return nil, errUnknownWebhook()
	}
	return ix, nil
}

// webhookMessageLocked finds @original or a follow-up of ix.
func webhookMessageLocked(ix *interaction, r *request) (*message, *apiError) {
	id := r.PathValue("m")
	var m *message
	if id == "" {
		m = ix.original
	} else if ix.original != nil && ix.original.id == id {
		m = ix.original
	} else {
		for _, f := range ix.followups {
			if f.id == id {
				m = f
			}
		}
	}
	if m == nil || m.deleted {
		return nil, errUnknownMessage()
	}
	return m, nil
}

// createFollowup is POST /webhooks/{app}/{token}. The first follow-up to a
// deferral (type 5) replaces the loading message, keeping its ephemeral
// setting, as Discord does; later ones are new messages. The message comes
// back only with ?wait=true.
func (s *Server) createFollowup(r *request) (int, any, *apiError) {
	mb, e := r.message()
	if e != nil {
		return fail(e)
	}
	ix, e := s.webhookInteractionLocked(r)
	if e != nil {
		return fail(e)
	}
	if !mb.nonEmpty(len(r.files)) {
		return fail(errEmptyMessage())
	}
	if e := validateMessage(mb.content(), mb.Embeds, mb.Components, mb.Flags); e != nil {
		return fail(e)
	}
	resp := newResponse(ix, ResponseFollowup, r.body, mb)
	var m *message
	if o := ix.original; o != nil && !o.deleted && o.flags&discordgo.MessageFlagsLoading != 0 {
		m = o
		m.content, m.embeds, m.components, m.allowed = mb.content(), mb.Embeds, mb.Components, mb.AllowedMentions
		for _, f := range r.files {
			m.attachments = append(m.attachments, s.newAttachmentLocked(m, f))
		}
		m.flags &^= discordgo.MessageFlagsLoading
		resp.Ephemeral = m.ephemeral
		if !m.ephemeral {
			s.dispatchLocked("MESSAGE_UPDATE", s.messageJSONLocked(m, true))
		}
	} else {
		m = s.interactionMessageLocked(ix, mb, r.files, resp.Ephemeral)
		ix.followups = append(ix.followups, m)
		if !m.ephemeral {
			s.dispatchLocked("MESSAGE_CREATE", s.messageJSONLocked(m, true))
		}
	}
	resp.MessageID = m.id
	ix.responses = append(ix.responses, resp)
	s.notifyLocked()
	if r.URL.Query().Get("wait") == "true" {
		return ok(s.messageJSONLocked(m, true))
	}
	return noContent()
}

// webhookTargetLocked finds the interaction of a webhook route and the
// message it names: @original or a follow-up.
func (s *Server) webhookTargetLocked(r *request) (*interaction, *message, *apiError) {
	ix, e := s.webhookInteractionLocked(r)
	if e != nil {
		return nil, nil, e
	}
	m, e := webhookMessageLocked(ix, r)
	if e != nil {
		return nil, nil, e
	}
	return ix, m, nil
}

// getWebhookMessage is GET .../messages/@original and .../messages/{m}.
func (s *Server) getWebhookMessage(r *request) (int, any, *apiError) {
	_, m, e := s.webhookTargetLocked(r)
	if e != nil {
		return fail(e)
	}
	return ok(s.messageJSONLocked(m, true))
}

// editWebhookMessage is PATCH .../messages/@original and .../messages/{m}.
// Editing a deferral's loading message ends the loading state.
func (s *Server) editWebhookMessage(r *request) (int, any, *apiError) {
	mb, e := r.message()
	if e != nil {
		return fail(e)
	}
	ix, m, e := s.webhookTargetLocked(r)
	if e != nil {
		return fail(e)
	}
	if e := s.applyEditLocked(m, mb, r.files); e != nil {
		return fail(e)
	}
	m.flags &^= discordgo.MessageFlagsLoading
	kind := ResponseEditFollowup
	if m == ix.original {
		kind = ResponseEditOriginal
	}
	resp := newResponse(ix, kind, r.body, mb)
	resp.MessageID, resp.Ephemeral, resp.Flags = m.id, m.ephemeral, m.flags
	ix.responses = append(ix.responses, resp)
	if !m.ephemeral {
		s.dispatchLocked("MESSAGE_UPDATE", s.messageJSONLocked(m, true))
	}
	s.notifyLocked()
	return ok(s.messageJSONLocked(m, true))
}

// deleteWebhookMessage is DELETE .../messages/@original and .../messages/{m}.
func (s *Server) deleteWebhookMessage(r *request) (int, any, *apiError) {
	ix, m, e := s.webhookTargetLocked(r)
	if e != nil {
		return fail(e)
	}
	kind := ResponseDeleteFollowup
	if m == ix.original {
		kind = ResponseDeleteOriginal
	}
	resp := newResponse(ix, kind, nil, nil)
	resp.MessageID, resp.Ephemeral = m.id, m.ephemeral
	ix.responses = append(ix.responses, resp)
	s.deleteLocked(m)
	return noContent()
}
