package discordfake

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// SubmitOption changes a modal submission.
type SubmitOption func(*submitOptions)

type submitOptions struct {
	locale, guildLocale string
}

// SubmitLocale sets the user's and the guild's locale on the submission;
// by default they are those of the interaction that showed the modal. An
// empty string keeps the default.
func SubmitLocale(locale, guildLocale string) SubmitOption {
	return func(o *submitOptions) { o.locale, o.guildLocale = locale, guildLocale }
}

// SubmitModal dispatches INTERACTION_CREATE for the submission (type 5,
// MODAL_SUBMIT) of the modal the bot showed in answer to ix, by the same
// user in the same channel: data.custom_id is the modal's and
// data.components holds one action row per text input with its value.
// values maps text inputs' custom_ids to what the user typed; an input
// left out keeps the value the bot prefilled.
//
// It fails, as the user's client would refuse to send it, when
// ix showed no modal, when an earlier submission of it was acknowledged
// (the modal closed), when a value names no text input, or when a value
// misses a required input or does not fit its min_length and max_length.
//
// The bot must acknowledge the submission within the deadline, once, with
// callback type 4 or 5, or, when a component opened the modal, also 6 or 7,
// which act on the component's message. A modal cannot answer a modal.
func (s *Server) SubmitModal(ix *Interaction, values map[string]string, opts ...SubmitOption) (*Interaction, error) {
	var o submitOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := checkLocales(o.locale, o.guildLocale); err != nil {
		return nil, fmt.Errorf("submit modal: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	opener := ix.ix
	if opener.modal == nil {
		return nil, fmt.Errorf("submit modal: interaction %s showed no modal", opener.describe())
	}
	if opener.closed {
		return nil, fmt.Errorf("submit modal %s: it was submitted and closed already", opener.modal.CustomID)
	}
	modal := opener.modal
	for _, id := range slices.Sorted(maps.Keys(values)) {
		if !slices.ContainsFunc(modal.Inputs, func(in TextInput) bool { return in.CustomID == id }) {
			return nil, fmt.Errorf("submit modal %s: no text input %q (inputs: %s)", modal.CustomID, id, inputIDs(modal))
		}
	}
	rows := make([]any, 0, len(modal.Inputs))
	for _, in := range modal.Inputs {
		v, ok := values[in.CustomID]
		if !ok {
			v = in.Value
		}
		n := utf8.RuneCountInString(v)
		switch {
		case in.Required && n == 0:
			return nil, fmt.Errorf("submit modal %s: required text input %q is empty", modal.CustomID, in.CustomID)
		case n > 0 && (n < in.MinLength || n > in.MaxLength):
			return nil, fmt.Errorf("submit modal %s: text input %q has %d characters, want %d to %d", modal.CustomID, in.CustomID, n, in.MinLength, in.MaxLength)
		}
		rows = append(rows, map[string]any{
			"type": int(discordgo.ActionsRowComponent),
			"components": []any{map[string]any{
				"type":      int(discordgo.TextInputComponent),
				"custom_id": in.CustomID,
				"value":     v,
			}},
		})
	}

	sub := s.newInteractionLocked(invocation{
		typ:         discordgo.InteractionModalSubmit,
		channel:     s.channels[opener.channelID],
		userID:      opener.user.id,
		perms:       opener.perms,
		locale:      cmp.Or(o.locale, opener.locale),
		guildLocale: cmp.Or(o.guildLocale, opener.guildLocale),
	})
	sub.customID, sub.opener, sub.message = modal.CustomID, opener, opener.message
	return s.dispatchInteractionLocked(sub, map[string]any{
		"custom_id":  modal.CustomID,
		"components": rows,
	}), nil
}

func inputIDs(m *Modal) string {
	ids := make([]string, 0, len(m.Inputs))
	for _, in := range m.Inputs {
		ids = append(ids, in.CustomID)
	}
	return strings.Join(ids, ", ")
}
