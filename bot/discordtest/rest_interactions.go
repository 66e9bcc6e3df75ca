package discordtest

import (
	"encoding/json"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// createInteractionResponse is POST /interactions/{id}/{token}/callback.
// The first callback must arrive within the deadline (3 s by default) and
// there can be only one. Application commands take types 4, 5 and 9,
// autocomplete takes type 8. Types 4 and 5 make the original response
// message, which the channel shows unless it is ephemeral.
func (s *Server) createInteractionResponse(r *request) (int, any, *apiError) {
	var req struct {
		Type discordgo.InteractionResponseType `json:"type"`
		Data json.RawMessage                   `json:"data"`
	}
	if e := r.decode(&req); e != nil {
		return fail(e)
	}
	data := req.Data
	if len(data) == 0 || string(data) == "null" {
		data = []byte("{}")
	}
	mb, e := decodeMessageBody(data)
	if e != nil {
		return fail(e)
	}

	ix := s.interactions[r.PathValue("id")]
	switch {
	case ix == nil || ix.token != r.PathValue("token"):
		return fail(errUnknownInteraction())
	case ix.acked:
		return fail(errAlreadyAcked())
	case time.Now().After(ix.deadline):
		ix.expired = true
		s.notifyLocked()
		return fail(errUnknownInteraction())
	}
	if e := checkCallback(ix, req.Type, mb, data, len(r.files)); e != nil {
		return fail(e)
	}

	ix.acked = true
	ix.timer.Stop()
	resp := newResponse(ix, ResponseCallback, r.body, mb)
	resp.Type = req.Type
	switch req.Type {
	case discordgo.InteractionResponseChannelMessageWithSource:
		ix.original = s.interactionMessageLocked(ix, mb, r.files, resp.Ephemeral)
	case discordgo.InteractionResponseDeferredChannelMessageWithSource:
		loading := &messageBody{Flags: mb.Flags & discordgo.MessageFlagsEphemeral}
		ix.original = s.interactionMessageLocked(ix, loading, nil, resp.Ephemeral)
		ix.original.flags |= discordgo.MessageFlagsLoading
	case discordgo.InteractionApplicationCommandAutocompleteResult:
		var d struct {
			Choices []*discordgo.ApplicationCommandOptionChoice `json:"choices"`
		}
		_ = json.Unmarshal(data, &d)
		resp.Choices = d.Choices
	}
	if ix.original != nil {
		resp.MessageID = ix.original.id
		if !ix.original.ephemeral {
			s.dispatchLocked("MESSAGE_CREATE", s.messageJSONLocked(ix.original, true))
		}
	}
	ix.responses = append(ix.responses, resp)
	s.notifyLocked()
	return noContent()
}

func checkCallback(ix *interaction, typ discordgo.InteractionResponseType, mb *messageBody, data []byte, files int) *apiError {
	allowed := []discordgo.InteractionResponseType{
		discordgo.InteractionResponseChannelMessageWithSource,
		discordgo.InteractionResponseDeferredChannelMessageWithSource,
		discordgo.InteractionResponseModal,
	}
	if ix.typ == discordgo.InteractionApplicationCommandAutocomplete {
		allowed = []discordgo.InteractionResponseType{discordgo.InteractionApplicationCommandAutocompleteResult}
	}
	ok := false
	for _, a := range allowed {
		ok = ok || a == typ
	}
	if !ok {
		return formError("INTERACTION_RESPONSE_TYPE_INVALID", "Interaction response type is not valid for this interaction", "type")
	}
	switch typ {
	case discordgo.InteractionResponseChannelMessageWithSource:
		if !mb.nonEmpty(files) {
			return errEmptyMessage()
		}
		return validateContent(mb.content(), mb.Embeds)
	case discordgo.InteractionApplicationCommandAutocompleteResult:
		var d struct {
			Choices []struct {
				Name  string `json:"name"`
				Value any    `json:"value"`
			} `json:"choices"`
		}
		_ = json.Unmarshal(data, &d)
		if len(d.Choices) > 25 {
			return formError("BASE_TYPE_MAX_LENGTH", "Must be 25 or fewer in length.", "data", "choices")
		}
		for _, c := range d.Choices {
			if n := utf8.RuneCountInString(c.Name); n < 1 || n > 100 || c.Value == nil {
				return formError("BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.", "data", "choices")
			}
		}
	case discordgo.InteractionResponseModal:
		var d struct {
			CustomID   string            `json:"custom_id"`
			Title      string            `json:"title"`
			Components []json.RawMessage `json:"components"`
		}
		_ = json.Unmarshal(data, &d)
		if d.CustomID == "" || d.Title == "" || len(d.Components) == 0 {
			return formError("BASE_TYPE_REQUIRED", "This field is required", "data")
		}
	}
	return nil
}

// interactionMessageLocked files a message answering ix.
func (s *Server) interactionMessageLocked(ix *interaction, mb *messageBody, files []Attachment, ephemeral bool) *message {
	mb.Reference = nil
	m := s.newMessageLocked(s.channels[ix.channelID], s.bot, mb, files)
	m.typ = discordgo.MessageTypeChatInputCommand
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
	if e := validateContent(mb.content(), mb.Embeds); e != nil {
		return fail(e)
	}
	resp := newResponse(ix, ResponseFollowup, r.body, mb)
	var m *message
	if o := ix.original; o != nil && !o.deleted && o.flags&discordgo.MessageFlagsLoading != 0 {
		m = o
		m.content, m.embeds, m.components, m.allowed = mb.content(), mb.Embeds, mb.Components, mb.AllowedMentions
		for _, f := range r.files {
			f.ID = s.newID()
			m.attachments = append(m.attachments, f)
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
