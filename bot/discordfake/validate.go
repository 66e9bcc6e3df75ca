package discordfake

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// Discord's message limits.
const (
	maxContent        = 2000
	maxEmbeds         = 10
	maxEmbedTotal     = 6000
	maxEmbedTitle     = 256
	maxEmbedDesc      = 4096
	maxEmbedFields    = 25
	maxEmbedFieldName = 256
	maxEmbedFieldVal  = 1024
	maxEmbedFooter    = 2048
	maxEmbedAuthor    = 256
	maxNonce          = 25
)

// messageBody is what the server reads from a create or edit message body,
// an interaction response's data, or a webhook message. Unknown keys, such
// as the "ID" and "Channel" discordgo puts in edits, are ignored.
type messageBody struct {
	Content         *string                     `json:"content"`
	Embeds          []json.RawMessage           `json:"embeds"`
	Components      []json.RawMessage           `json:"components"`
	StickerIDs      []string                    `json:"sticker_ids"`
	AllowedMentions json.RawMessage             `json:"allowed_mentions"`
	Reference       *discordgo.MessageReference `json:"message_reference"`
	Nonce           json.RawMessage             `json:"nonce"`
	EnforceNonce    bool                        `json:"enforce_nonce"`
	Flags           discordgo.MessageFlags      `json:"flags"`
	Poll            json.RawMessage             `json:"poll"`

	present map[string]json.RawMessage // the keys of the body, to tell absent from null
}

func decodeMessageBody(body []byte) (*messageBody, *apiError) {
	var mb messageBody
	if e := decode(body, &mb); e != nil {
		return nil, e
	}
	if e := decode(body, &mb.present); e != nil {
		return nil, e
	}
	return &mb, nil
}

func (mb *messageBody) has(key string) bool {
	_, ok := mb.present[key]
	return ok
}

func (mb *messageBody) content() string {
	if mb.Content == nil {
		return ""
	}
	return *mb.Content
}

// nonce returns the nonce as a string; Discord takes a string or an integer.
func (mb *messageBody) nonce() (string, *apiError) {
	if len(mb.Nonce) == 0 || string(mb.Nonce) == "null" {
		return "", nil
	}
	var str string
	if json.Unmarshal(mb.Nonce, &str) != nil {
		var n json.Number
		if json.Unmarshal(mb.Nonce, &n) != nil {
			return "", formError("BASE_TYPE_BAD_TYPE", "Must be a string or an integer.", "nonce")
		}
		if _, err := strconv.ParseInt(string(n), 10, 64); err != nil {
			return "", formError("BASE_TYPE_BAD_TYPE", "Must be a string or an integer.", "nonce")
		}
		str = string(n)
	}
	if utf8.RuneCountInString(str) > maxNonce {
		return "", formError("BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", maxNonce), "nonce")
	}
	return str, nil
}

// nonEmpty reports whether a new message has something to show.
func (mb *messageBody) nonEmpty(files int) bool {
	return mb.content() != "" || len(mb.Embeds) > 0 || len(mb.Components) > 0 ||
		len(mb.StickerIDs) > 0 || files > 0 || (len(mb.Poll) > 0 && string(mb.Poll) != "null")
}

// validateMessage checks the content, embed and component limits.
func validateMessage(content string, embeds, components []json.RawMessage, flags discordgo.MessageFlags) *apiError {
	if e := validateContent(content, embeds); e != nil {
		return e
	}
	return validateComponents(components, flags)
}

// validateContent checks the content and embed limits.
func validateContent(content string, embeds []json.RawMessage) *apiError {
	if utf8.RuneCountInString(content) > maxContent {
		return formError("BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", maxContent), "content")
	}
	if len(embeds) > maxEmbeds {
		return formError("BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", maxEmbeds), "embeds")
	}
	total := 0
	for i, raw := range embeds {
		var e struct {
			Title       string `json:"title"`
			Description string `json:"description"`
			Fields      []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"fields"`
			Footer *struct {
				Text string `json:"text"`
			} `json:"footer"`
			Author *struct {
				Name string `json:"name"`
			} `json:"author"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			return formError("MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType", "embeds", strconv.Itoa(i))
		}
		idx := strconv.Itoa(i)
		check := func(s string, limit int, path ...string) *apiError {
			n := utf8.RuneCountInString(s)
			total += n
			if n > limit {
				return formError("BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", limit), append([]string{"embeds", idx}, path...)...)
			}
			return nil
		}
		if err := check(e.Title, maxEmbedTitle, "title"); err != nil {
			return err
		}
		if err := check(e.Description, maxEmbedDesc, "description"); err != nil {
			return err
		}
		if len(e.Fields) > maxEmbedFields {
			return formError("BASE_TYPE_MAX_LENGTH", fmt.Sprintf("Must be %d or fewer in length.", maxEmbedFields), "embeds", idx, "fields")
		}
		for j, f := range e.Fields {
			if strings.TrimSpace(f.Name) == "" || strings.TrimSpace(f.Value) == "" {
				return formError("BASE_TYPE_REQUIRED", "This field is required", "embeds", idx, "fields", strconv.Itoa(j))
			}
			if err := check(f.Name, maxEmbedFieldName, "fields", strconv.Itoa(j), "name"); err != nil {
				return err
			}
			if err := check(f.Value, maxEmbedFieldVal, "fields", strconv.Itoa(j), "value"); err != nil {
				return err
			}
		}
		if e.Footer != nil {
			if err := check(e.Footer.Text, maxEmbedFooter, "footer", "text"); err != nil {
				return err
			}
		}
		if e.Author != nil {
			if err := check(e.Author.Name, maxEmbedAuthor, "author", "name"); err != nil {
				return err
			}
		}
	}
	if total > maxEmbedTotal {
		return formError("MAX_EMBED_SIZE_EXCEEDED", fmt.Sprintf("Embed size exceeds maximum size of %d", maxEmbedTotal), "embeds")
	}
	return nil
}
