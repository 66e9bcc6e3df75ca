package discordfake

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// Discord's limits on message components (legacy action rows).
const (
	maxActionRows   = 5
	maxRowButtons   = 5
	maxCustomID     = 100
	maxButtonLabel  = 80
	maxButtonURL    = 512
	maxSelectOption = 25
)

// ActionRow is a row of components on a message.
type ActionRow struct {
	Components []Component
}

// Component is a button or a select menu in an action row, as the bot
// defined it.
type Component struct {
	Type     discordgo.ComponentType
	CustomID string
	Label    string                // buttons
	Style    discordgo.ButtonStyle // buttons
	URL      string                // link buttons
	Disabled bool
}

// Buttons returns the buttons of the message, row by row.
func (m Message) Buttons() []Component {
	var out []Component
	for _, row := range m.Components {
		for _, c := range row.Components {
			if c.Type == discordgo.ButtonComponent {
				out = append(out, c)
			}
		}
	}
	return out
}

// Button returns the button with the given custom_id.
func (m Message) Button(customID string) (Component, bool) {
	for _, b := range m.Buttons() {
		if b.CustomID == customID {
			return b, true
		}
	}
	return Component{}, false
}

// componentDef is a component as sent; pointers tell absent from empty.
type componentDef struct {
	Type       discordgo.ComponentType `json:"type"`
	CustomID   *string                 `json:"custom_id"`
	Label      *string                 `json:"label"`
	Style      int                     `json:"style"`
	URL        *string                 `json:"url"`
	SKUID      string                  `json:"sku_id"`
	Disabled   bool                    `json:"disabled"`
	Emoji      json.RawMessage         `json:"emoji"`
	Options    []json.RawMessage       `json:"options"`
	Components []json.RawMessage       `json:"components"`
}

func (d *componentDef) customID() string { return deref(d.CustomID) }

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// parseRows decodes stored components into the snapshot's rows, skipping
// what is not an action row.
func parseRows(raws []json.RawMessage) []ActionRow {
	var rows []ActionRow
	for _, raw := range raws {
		var row componentDef
		if json.Unmarshal(raw, &row) != nil || row.Type != discordgo.ActionsRowComponent {
			continue
		}
		var out ActionRow
		for _, craw := range row.Components {
			var c componentDef
			if json.Unmarshal(craw, &c) != nil {
				continue
			}
			out.Components = append(out.Components, Component{
				Type:     c.Type,
				CustomID: c.customID(),
				Label:    deref(c.Label),
				Style:    discordgo.ButtonStyle(c.Style),
				URL:      deref(c.URL),
				Disabled: c.Disabled,
			})
		}
		rows = append(rows, out)
	}
	return rows
}

// validateComponents checks a message's components as Discord does for
// action rows: at most 5 rows, each holding 1 to 5 buttons or a single
// select menu; interactive buttons (styles 1 to 4) need a custom_id of at
// most 100 characters and no url, link buttons (style 5) a url and no
// custom_id; labels hold at most 80 characters; custom_ids are unique in
// the message. Messages flagged IS_COMPONENTS_V2 are not checked.
func validateComponents(raws []json.RawMessage, flags discordgo.MessageFlags) *apiError {
	if flags&discordgo.MessageFlagsIsComponentsV2 != 0 {
		return nil
	}
	if len(raws) > maxActionRows {
		return formError("BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", maxActionRows), "components")
	}
	seen := map[string]bool{}
	for i, raw := range raws {
		at := func(path ...string) []string { return append([]string{"components", strconv.Itoa(i)}, path...) }
		var row componentDef
		if json.Unmarshal(raw, &row) != nil {
			return formError("MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType", at()...)
		}
		if row.Type != discordgo.ActionsRowComponent {
			return formError("UNION_TYPE_CHOICES", `Value of field "type" must be one of (1,); other top-level components need the IS_COMPONENTS_V2 flag.`, at("type")...)
		}
		if n := len(row.Components); n < 1 || n > maxRowButtons {
			return formError("BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be between 1 and %d in length.", maxRowButtons), at("components")...)
		}
		for j, craw := range row.Components {
			cat := func(field ...string) []string {
				return at(append([]string{"components", strconv.Itoa(j)}, field...)...)
			}
			var c componentDef
			if json.Unmarshal(craw, &c) != nil {
				return formError("MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType", cat()...)
			}
			var e *apiError
			switch c.Type {
			case discordgo.ButtonComponent:
				e = validateButton(&c, cat)
			case discordgo.SelectMenuComponent, discordgo.UserSelectMenuComponent, discordgo.RoleSelectMenuComponent,
				discordgo.MentionableSelectMenuComponent, discordgo.ChannelSelectMenuComponent:
				e = validateSelect(&c, len(row.Components), cat)
			default:
				e = formError("UNION_TYPE_CHOICES", `Value of field "type" must be one of (2, 3, 5, 6, 7, 8) in an action row of a message.`, cat("type")...)
			}
			if e != nil {
				return e
			}
			if id := c.customID(); id != "" {
				if seen[id] {
					return formError("COMPONENT_CUSTOM_ID_DUPLICATED", fmt.Sprintf("Component custom id %q cannot be duplicated", id), cat("custom_id")...)
				}
				seen[id] = true
			}
		}
	}
	return nil
}

func validateButton(c *componentDef, at func(...string) []string) *apiError {
	if n := utf8.RuneCountInString(deref(c.Label)); n > maxButtonLabel {
		return formError("BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", maxButtonLabel), at("label")...)
	}
	switch c.Style {
	case 1, 2, 3, 4:
		if c.URL != nil {
			return formError("BUTTON_COMPONENT_URL_NOT_ALLOWED", "A button with a custom_id (styles 1 to 4) cannot have a url.", at("url")...)
		}
		if e := checkCustomID(c.CustomID, at); e != nil {
			return e
		}
	case 5:
		if c.CustomID != nil {
			return formError("BUTTON_COMPONENT_CUSTOM_ID_NOT_ALLOWED", "A link button (style 5) cannot have a custom_id.", at("custom_id")...)
		}
		u, err := url.Parse(deref(c.URL))
		if c.URL == nil || err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "discord") || len(*c.URL) > maxButtonURL {
			return formError("URL_TYPE_INVALID_URL", "A link button (style 5) needs a valid http, https or discord url of at most 512 characters.", at("url")...)
		}
	case 6:
		if c.SKUID == "" || c.CustomID != nil || c.URL != nil || deref(c.Label) != "" {
			return formError("BUTTON_COMPONENT_INVALID", "A premium button (style 6) has a sku_id and no custom_id, url or label.", at()...)
		}
		return nil
	default:
		return formError("BASE_TYPE_CHOICES", "Value must be one of {1, 2, 3, 4, 5, 6}.", at("style")...)
	}
	if deref(c.Label) == "" && (len(c.Emoji) == 0 || string(c.Emoji) == "null") {
		return formError("BUTTON_COMPONENT_LABEL_OR_EMOJI_REQUIRED", "A button needs a label or an emoji.", at("label")...)
	}
	return nil
}

func validateSelect(c *componentDef, inRow int, at func(...string) []string) *apiError {
	if inRow != 1 {
		return formError("COMPONENT_LAYOUT_WIDTH_EXCEEDED", "A select menu must be alone in its action row.", at()...)
	}
	if e := checkCustomID(c.CustomID, at); e != nil {
		return e
	}
	if c.Type == discordgo.SelectMenuComponent {
		if n := len(c.Options); n < 1 || n > maxSelectOption {
			return formError("BASE_TYPE_BAD_LENGTH", fmt.Sprintf("Must be between 1 and %d in length.", maxSelectOption), at("options")...)
		}
	}
	return nil
}

func checkCustomID(id *string, at func(...string) []string) *apiError {
	switch n := utf8.RuneCountInString(deref(id)); {
	case n == 0:
		return formError("BASE_TYPE_REQUIRED", "This field is required", at("custom_id")...)
	case n > maxCustomID:
		return formError("BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", maxCustomID), at("custom_id")...)
	}
	return nil
}
