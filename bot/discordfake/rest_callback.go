package discordfake

import (
	"encoding/json"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// createInteractionResponse is POST /interactions/{id}/{token}/callback.
// The first callback must arrive within the deadline (3 s by default) and
// there can be only one; allowedCallbacks says which types fit which
// interaction. Types 4 and 5 make the original response message, which
// the channel shows unless it is ephemeral. Types 6 and 7 acknowledge a
// component interaction by (later, or at once) editing the message the
// component is on, which then is the original (@original) of the token.
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

	resp := newResponse(ix, ResponseCallback, r.body, mb)
	resp.Type = req.Type
	created := false
	switch req.Type {
	case discordgo.InteractionResponseChannelMessageWithSource:
		ix.original = s.interactionMessageLocked(ix, mb, r.files, resp.Ephemeral)
		created = true
	case discordgo.InteractionResponseDeferredChannelMessageWithSource:
		loading := &messageBody{Flags: mb.Flags & discordgo.MessageFlagsEphemeral}
		ix.original = s.interactionMessageLocked(ix, loading, nil, resp.Ephemeral)
		ix.original.flags |= discordgo.MessageFlagsLoading
		created = true
	case discordgo.InteractionResponseDeferredMessageUpdate, discordgo.InteractionResponseUpdateMessage:
		m := ix.message
		if m.deleted {
			return fail(errUnknownMessage())
		}
		if req.Type == discordgo.InteractionResponseUpdateMessage {
			if e := s.applyEditLocked(m, mb, r.files); e != nil {
				return fail(e)
			}
			if !m.ephemeral {
				s.dispatchLocked("MESSAGE_UPDATE", s.messageJSONLocked(m, true))
			}
		}
		ix.original = m
		resp.Ephemeral = m.ephemeral
	case discordgo.InteractionApplicationCommandAutocompleteResult:
		var d struct {
			Choices []*discordgo.ApplicationCommandOptionChoice `json:"choices"`
		}
		_ = json.Unmarshal(data, &d)
		resp.Choices = d.Choices
	case discordgo.InteractionResponseModal:
		ix.modal, _ = parseModal(data) // checked by checkCallback
		shown := ix.modal.clone()
		resp.Modal = &shown
	}
	ix.acked = true
	ix.timer.Stop()
	if ix.opener != nil {
		ix.opener.closed = true // the user's client closes the modal
	}
	if ix.original != nil {
		resp.MessageID = ix.original.id
		if created && !ix.original.ephemeral {
			s.dispatchLocked("MESSAGE_CREATE", s.messageJSONLocked(ix.original, true))
		}
	}
	ix.responses = append(ix.responses, resp)
	s.notifyLocked()
	if f := s.onAck; f != nil {
		handle := &Interaction{ID: ix.id, Token: ix.token, s: s, ix: ix}
		r.after = func() { f(handle) }
	}
	return noContent()
}

// allowedCallbacks are the callback types that may acknowledge ix: a
// modal (9) answers a command or a component, never a modal submit; the
// component updates (6 and 7) need a message with the component, which a
// modal submit has when a component opened the modal.
func allowedCallbacks(ix *interaction) []discordgo.InteractionResponseType {
	const (
		message  = discordgo.InteractionResponseChannelMessageWithSource
		deferred = discordgo.InteractionResponseDeferredChannelMessageWithSource
		deferUpd = discordgo.InteractionResponseDeferredMessageUpdate
		update   = discordgo.InteractionResponseUpdateMessage
		modal    = discordgo.InteractionResponseModal
	)
	switch ix.typ {
	case discordgo.InteractionApplicationCommandAutocomplete:
		return []discordgo.InteractionResponseType{discordgo.InteractionApplicationCommandAutocompleteResult}
	case discordgo.InteractionMessageComponent:
		return []discordgo.InteractionResponseType{message, deferred, deferUpd, update, modal}
	case discordgo.InteractionModalSubmit:
		if ix.message != nil {
			return []discordgo.InteractionResponseType{message, deferred, deferUpd, update}
		}
		return []discordgo.InteractionResponseType{message, deferred}
	}
	return []discordgo.InteractionResponseType{message, deferred, modal}
}

func checkCallback(ix *interaction, typ discordgo.InteractionResponseType, mb *messageBody, data []byte, files int) *apiError {
	if !slices.Contains(allowedCallbacks(ix), typ) {
		return formError("INTERACTION_RESPONSE_TYPE_INVALID", "Interaction response type is not valid for this interaction", "type")
	}
	switch typ {
	case discordgo.InteractionResponseChannelMessageWithSource:
		if !mb.nonEmpty(files) {
			return errEmptyMessage()
		}
		return validateMessage(mb.content(), mb.Embeds, mb.Components, mb.Flags)
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
		_, e := parseModal(data)
		return e
	}
	return nil
}
