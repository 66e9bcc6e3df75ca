package bot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// Discord JSON error codes the bot reacts to.
const (
	codeUnknownChannel = 10003
	codeMissingAccess  = 50001
	codeMissingPerms   = 50013
	codeThreadArchived = 50083
)

// Messenger posts for the master. Every message it creates pings nobody
// but, for a reply, the author replied to, and the one user a message
// names as its Mention (a report to the trusted bot that asked for it).
type Messenger struct {
	s *discordgo.Session
	p *personas // members' parts through webhooks; nil: in callon's own voice, named
}

var _ master.Messenger = (*Messenger)(nil)

// NewMessenger returns a Messenger over a discordgo session.
func NewMessenger(s *discordgo.Session) *Messenger { return &Messenger{s: s} }

// outgoing is the create-message body. discordgo's MessageSend has no
// nonce, so the bot sends its own body through the session.
type outgoing struct {
	Content          string                            `json:"content"`
	Nonce            string                            `json:"nonce,omitempty"`
	EnforceNonce     bool                              `json:"enforce_nonce,omitempty"`
	AllowedMentions  *discordgo.MessageAllowedMentions `json:"allowed_mentions"`
	MessageReference *discordgo.MessageReference       `json:"message_reference,omitempty"`
	Components       []discordgo.MessageComponent      `json:"components,omitempty"`
}

// components lays buttons out in action rows of at most five, as
// Discord takes them.
func components(buttons []master.Button) []discordgo.MessageComponent {
	var rows []discordgo.MessageComponent
	for len(buttons) > 0 {
		n := min(len(buttons), 5)
		row := discordgo.ActionsRow{}
		for _, b := range buttons[:n] {
			row.Components = append(row.Components, discordgo.Button{Label: b.Label, Style: discordgo.ButtonStyle(b.Style), CustomID: b.CustomID})
		}
		rows = append(rows, row)
		buttons = buttons[n:]
	}
	return rows
}

// Send posts m with its nonce and enforce_nonce, so a resend after a crash
// returns the first message instead of a duplicate. A thread archived in
// the meantime is unarchived once.
func (m *Messenger) Send(ctx context.Context, msg master.OutMessage) (string, error) {
	if msg.Persona != nil && !msg.Persona.Fallback && m.p != nil {
		return m.sendAs(ctx, msg)
	}
	body := outgoing{
		Content:         ownVoice(msg),
		Nonce:           msg.Nonce,
		EnforceNonce:    msg.Nonce != "",
		AllowedMentions: noMentions(),
		Components:      components(msg.Buttons),
	}
	if msg.Mention != "" {
		body.AllowedMentions.Users = []string{msg.Mention}
	}
	if msg.ReplyTo != "" {
		no := false
		body.MessageReference = &discordgo.MessageReference{MessageID: msg.ReplyTo, ChannelID: msg.ChannelID, FailIfNotExists: &no}
		body.AllowedMentions.RepliedUser = true
	}
	sent, err := m.post(ctx, msg.ChannelID, body, msg.File)
	if discordCode(err) == codeThreadArchived {
		if uerr := m.unarchive(ctx, msg.ChannelID); uerr == nil {
			sent, err = m.post(ctx, msg.ChannelID, body, msg.File)
		}
	}
	if err != nil {
		return "", classify(fmt.Errorf("send message to %s: %w", msg.ChannelID, err))
	}
	return sent.ID, nil
}

// post creates a message, with file attached when it has a name (sent as
// multipart, the body as payload_json).
func (m *Messenger) post(ctx context.Context, channelID string, body outgoing, file master.File) (*discordgo.Message, error) {
	endpoint := discordgo.EndpointChannelMessages(channelID)
	var raw []byte
	var err error
	if file.Name == "" {
		raw, err = m.s.RequestWithBucketID(http.MethodPost, endpoint, body, endpoint, discordgo.WithContext(ctx))
	} else {
		ct, b, merr := discordgo.MultipartBodyWithJSON(body, []*discordgo.File{{Name: file.Name, ContentType: "application/json",
			Reader: bytes.NewReader(file.Data)}})
		if merr != nil {
			return nil, fmt.Errorf("encode the message with its file: %w", merr)
		}
		raw, err = m.s.RequestRaw(http.MethodPost, endpoint, ct, b, endpoint, 0, discordgo.WithContext(ctx))
	}
	if err != nil {
		return nil, err
	}
	var sent discordgo.Message
	if err := json.Unmarshal(raw, &sent); err != nil {
		return nil, fmt.Errorf("decode sent message: %w", err)
	}
	return &sent, nil
}

func (m *Messenger) unarchive(ctx context.Context, threadID string) error {
	no := false
	_, err := m.s.ChannelEdit(threadID, &discordgo.ChannelEdit{Archived: &no}, discordgo.WithContext(ctx))
	return err
}

// findPages bounds how far back Find looks: 500 messages.
const findPages = 5

// Find looks for msg among the bot's messages in its channel posted since
// a minute before msg.MaybeSentAt: same content and, for a reply, the
// same message replied to. It returns the message's id, or "".
func (m *Messenger) Find(ctx context.Context, msg master.OutMessage) (string, error) {
	if msg.Persona != nil {
		return m.findAs(ctx, msg)
	}
	me := m.botID()
	return m.findSince(ctx, msg, func(x *discordgo.Message) bool {
		return x.Author != nil && x.Author.ID == me && x.Content == msg.Content &&
			(msg.ReplyTo == "" || (x.MessageReference != nil && x.MessageReference.MessageID == msg.ReplyTo))
	})
}

// findSince walks msg's channel forward from a minute before msg may have
// been sent, at most findPages pages, and returns the id of the first
// message match accepts, or "".
func (m *Messenger) findSince(ctx context.Context, msg master.OutMessage, match func(*discordgo.Message) bool) (string, error) {
	after := strconv.FormatInt(master.Snowflake(msg.MaybeSentAt.Add(-time.Minute)), 10)
	for range findPages {
		list, err := m.s.ChannelMessages(msg.ChannelID, 100, "", after, "", discordgo.WithContext(ctx))
		if err != nil {
			return "", classify(fmt.Errorf("read messages of %s: %w", msg.ChannelID, err))
		}
		for _, x := range list {
			if match(x) {
				return x.ID, nil
			}
		}
		if len(list) < 100 {
			return "", nil
		}
		for _, x := range list { // pages go forward from the newest seen
			if n, _ := master.ParseSnowflake(x.ID); n > mustSnowflake(after) {
				after = x.ID
			}
		}
	}
	return "", nil
}

func mustSnowflake(id string) int64 {
	n, _ := master.ParseSnowflake(id)
	return n
}

// botID is the bot user's id, known once the gateway said READY.
func (m *Messenger) botID() string {
	m.s.State.RLock()
	defer m.s.State.RUnlock()
	if m.s.State.User != nil {
		return m.s.State.User.ID
	}
	return ""
}

// Edit replaces a message's content and removes its buttons, still
// pinging nobody.
func (m *Messenger) Edit(ctx context.Context, channelID, messageID, content string) error {
	none := []discordgo.MessageComponent{}
	_, err := m.s.ChannelMessageEditComplex(&discordgo.MessageEdit{
		ID:              messageID,
		Channel:         channelID,
		Content:         &content,
		Components:      &none,
		AllowedMentions: noMentions(),
	}, discordgo.WithContext(ctx))
	if err != nil {
		return classify(fmt.Errorf("edit message %s: %w", messageID, err))
	}
	return nil
}

// Archive archives a thread.
func (m *Messenger) Archive(ctx context.Context, threadID string) error {
	yes := true
	if _, err := m.s.ChannelEdit(threadID, &discordgo.ChannelEdit{Archived: &yes}, discordgo.WithContext(ctx)); err != nil {
		return classify(fmt.Errorf("archive thread %s: %w", threadID, err))
	}
	return nil
}

// Typing shows the typing indicator.
func (m *Messenger) Typing(ctx context.Context, channelID string) error {
	return m.s.ChannelTyping(channelID, discordgo.WithContext(ctx))
}

// classify marks errors that retrying cannot fix as master.ErrPermanent:
// every 4xx but 429 (which discordgo already waits out).
func classify(err error) error {
	var rerr *discordgo.RESTError
	if errors.As(err, &rerr) && rerr.Response != nil {
		if s := rerr.Response.StatusCode; s >= 400 && s < 500 && s != http.StatusTooManyRequests && s != http.StatusRequestTimeout {
			return fmt.Errorf("%w: %w", master.ErrPermanent, err)
		}
	}
	return err
}

// discordCode is the JSON error code of a Discord REST error, or 0.
func discordCode(err error) int {
	var rerr *discordgo.RESTError
	if errors.As(err, &rerr) && rerr.Message != nil {
		return rerr.Message.Code
	}
	return 0
}
