package discordfake

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// Discord's limits on modals.
const (
	maxModalTitle   = 45
	maxModalRows    = 5
	maxInputLabel   = 45
	maxInputLength  = 4000
	maxPlaceholder  = 100
	defaultMaxInput = maxInputLength
)

// Modal is a modal the bot showed (callback type 9).
type Modal struct {
	CustomID string
	Title    string
	Inputs   []TextInput // one per action row, in order
}

// TextInput is a text field of a modal.
type TextInput struct {
	CustomID    string
	Label       string
	Style       discordgo.TextInputStyle // 1 short, 2 paragraph
	MinLength   int
	MaxLength   int // 4000 when the bot set none
	Required    bool
	Value       string // prefilled by the bot
	Placeholder string
}

// modalDef is a modal as sent; pointers tell absent from empty.
type modalDef struct {
	CustomID   *string           `json:"custom_id"`
	Title      *string           `json:"title"`
	Components []json.RawMessage `json:"components"`
}

type textInputDef struct {
	Type        discordgo.ComponentType `json:"type"`
	CustomID    *string                 `json:"custom_id"`
	Label       *string                 `json:"label"`
	Style       int                     `json:"style"`
	MinLength   *int                    `json:"min_length"`
	MaxLength   *int                    `json:"max_length"`
	Required    *bool                   `json:"required"`
	Value       *string                 `json:"value"`
	Placeholder *string                 `json:"placeholder"`
}

// parseModal checks the data of a modal callback as Discord does: a
// custom_id of 1 to 100 characters, a title of 1 to 45, and 1 to 5 action
// rows each holding exactly one text input (type 4) with a unique
// custom_id, a label of 1 to 45 characters, style 1 or 2, lengths up to
// 4000 and required defaulting to true.
func parseModal(data []byte) (*Modal, *apiError) {
	var d modalDef
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, errInvalidJSON()
	}
	at := func(path ...string) []string { return append([]string{"data"}, path...) }
	if e := checkCustomID(d.CustomID, at); e != nil {
		return nil, e
	}
	if n := utf8.RuneCountInString(deref(d.Title)); n < 1 || n > maxModalTitle {
		return nil, formError("BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be between 1 and %d in length.", maxModalTitle), at("title")...)
	}
	if n := len(d.Components); n < 1 || n > maxModalRows {
		return nil, formError("BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be between 1 and %d in length.", maxModalRows), at("components")...)
	}
	m := &Modal{CustomID: *d.CustomID, Title: *d.Title}
	for i, raw := range d.Components {
		rowAt := func(path ...string) []string { return at(append([]string{"components", strconv.Itoa(i)}, path...)...) }
		var row componentDef
		if json.Unmarshal(raw, &row) != nil || row.Type != discordgo.ActionsRowComponent {
			return nil, formError("UNION_TYPE_CHOICES", `Value of field "type" must be one of (1,).`, rowAt("type")...)
		}
		if len(row.Components) != 1 {
			return nil, formError("BASE_TYPE_BAD_LENGTH", "Must be between 1 and 1 in length: one text input per action row.", rowAt("components")...)
		}
		in, e := parseTextInput(row.Components[0], func(path ...string) []string { return rowAt(append([]string{"components", "0"}, path...)...) })
		if e != nil {
			return nil, e
		}
		if slices.ContainsFunc(m.Inputs, func(t TextInput) bool { return t.CustomID == in.CustomID }) {
			return nil, formError("COMPONENT_CUSTOM_ID_DUPLICATED", fmt.Sprintf("Component custom id %q cannot be duplicated", in.CustomID), rowAt("components", "0", "custom_id")...)
		}
		m.Inputs = append(m.Inputs, in)
	}
	return m, nil
}

func parseTextInput(raw json.RawMessage, at func(...string) []string) (TextInput, *apiError) {
	var d textInputDef
	if json.Unmarshal(raw, &d) != nil || d.Type != discordgo.TextInputComponent {
		return TextInput{}, formError("UNION_TYPE_CHOICES", `Value of field "type" must be one of (4,) in a modal's action row.`, at("type")...)
	}
	if e := checkCustomID(d.CustomID, at); e != nil {
		return TextInput{}, e
	}
	if n := utf8.RuneCountInString(deref(d.Label)); n < 1 || n > maxInputLabel {
		return TextInput{}, formError("BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be between 1 and %d in length.", maxInputLabel), at("label")...)
	}
	if d.Style != 1 && d.Style != 2 {
		return TextInput{}, formError("BASE_TYPE_CHOICES", "Value must be one of {1, 2}.", at("style")...)
	}
	in := TextInput{
		CustomID:    *d.CustomID,
		Label:       *d.Label,
		Style:       discordgo.TextInputStyle(d.Style),
		MaxLength:   defaultMaxInput,
		Required:    d.Required == nil || *d.Required,
		Value:       deref(d.Value),
		Placeholder: deref(d.Placeholder),
	}
	if d.MinLength != nil {
		if *d.MinLength < 0 || *d.MinLength > maxInputLength {
			return TextInput{}, formError("NUMBER_TYPE_MAX", fmt.Sprintf("int value should be between 0 and %d.", maxInputLength), at("min_length")...)
		}
		in.MinLength = *d.MinLength
	}
	if d.MaxLength != nil {
		if *d.MaxLength < 1 || *d.MaxLength > maxInputLength {
			return TextInput{}, formError("NUMBER_TYPE_MAX", fmt.Sprintf("int value should be between 1 and %d.", maxInputLength), at("max_length")...)
		}
		in.MaxLength = *d.MaxLength
	}
	if in.MinLength > in.MaxLength {
		return TextInput{}, formError("TEXT_INPUT_LENGTH_INVALID", "min_length must not exceed max_length.", at("min_length")...)
	}
	if utf8.RuneCountInString(in.Value) > in.MaxLength {
		return TextInput{}, formError("BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", in.MaxLength), at("value")...)
	}
	if utf8.RuneCountInString(in.Placeholder) > maxPlaceholder {
		return TextInput{}, formError("BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", maxPlaceholder), at("placeholder")...)
	}
	return in, nil
}

func (m *Modal) clone() Modal {
	out := *m
	out.Inputs = slices.Clone(m.Inputs)
	return out
}

// Modal returns the modal the bot showed in answer to the interaction.
func (i *Interaction) Modal() (Modal, bool) {
	i.s.mu.Lock()
	defer i.s.mu.Unlock()
	if i.ix.modal == nil {
		return Modal{}, false
	}
	return i.ix.modal.clone(), true
}

// WaitModal waits until the bot has shown a modal in answer to the
// interaction and returns it.
func (i *Interaction) WaitModal() (Modal, error) {
	var m Modal
	err := i.s.WaitFor(func() bool {
		var ok bool
		m, ok = i.Modal()
		return ok
	}, "a modal in answer to "+i.ix.describe())
	return m, err
}
