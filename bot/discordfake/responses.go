package discordfake

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/bwmarrin/discordgo"
)

// Interaction is a dispatched interaction (a slash command, an
// autocomplete, a button click or a modal submission), to watch how the
// bot answers it.
type Interaction struct {
	ID    string
	Token string

	s  *Server
	ix *interaction
}

// ResponseKind says which endpoint a Response came through.
type ResponseKind string

// The kinds of interaction responses.
const (
	ResponseCallback       ResponseKind = "callback"        // POST /interactions/{id}/{token}/callback
	ResponseEditOriginal   ResponseKind = "edit_original"   // PATCH .../messages/@original
	ResponseDeleteOriginal ResponseKind = "delete_original" // DELETE .../messages/@original
	ResponseFollowup       ResponseKind = "followup"        // POST /webhooks/{app}/{token}
	ResponseEditFollowup   ResponseKind = "edit_followup"   // PATCH .../messages/{m}
	ResponseDeleteFollowup ResponseKind = "delete_followup" // DELETE .../messages/{m}
)

// Response is one accepted answer of the bot to an interaction. Rejected
// requests (after the deadline, a second callback, invalid bodies) are not
// recorded; count them with Calls.
type Response struct {
	Kind      ResponseKind
	Type      discordgo.InteractionResponseType // callbacks only
	MessageID string                            // the message created, edited or deleted, if any
	Content   string                            // as sent; "" when absent
	Embeds    []*discordgo.MessageEmbed
	Flags     discordgo.MessageFlags
	Ephemeral bool // the message is ephemeral (for a follow-up to a deferral, as the deferral said)
	// AllowedMentions as sent; nil when absent.
	AllowedMentions *discordgo.MessageAllowedMentions
	Choices         []*discordgo.ApplicationCommandOptionChoice // autocomplete results
	Modal           *Modal                                      // the modal shown (callback type 9)
	Body            json.RawMessage                             // the request body (payload_json for uploads)
	After           time.Duration                               // time since the interaction was dispatched
}

func newResponse(ix *interaction, kind ResponseKind, body []byte, mb *messageBody) Response {
	r := Response{Kind: kind, Body: json.RawMessage(body), After: time.Since(ix.dispatched)}
	if mb != nil {
		r.Content = mb.content()
		r.Flags = mb.Flags
		r.Ephemeral = mb.Flags&discordgo.MessageFlagsEphemeral != 0
		for _, raw := range mb.Embeds {
			var e discordgo.MessageEmbed
			if json.Unmarshal(raw, &e) == nil {
				r.Embeds = append(r.Embeds, &e)
			}
		}
		if len(mb.AllowedMentions) > 0 && string(mb.AllowedMentions) != "null" {
			var am discordgo.MessageAllowedMentions
			if json.Unmarshal(mb.AllowedMentions, &am) == nil {
				r.AllowedMentions = &am
			}
		}
	}
	return r
}

// OnAck makes f run each time the server accepts the first callback of
// an interaction (its acknowledgement), before the bot has the answer:
// a test can act at the instant the bot's acknowledgement went out (stop
// the bot, say). f must not wait for the bot. nil removes it.
func (s *Server) OnAck(f func(*Interaction)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onAck = f
}

// CustomID is the custom_id of the component clicked or of the modal
// submitted; "" for a command.
func (i *Interaction) CustomID() string { return i.ix.customID }

// Responses returns the bot's accepted responses, in order.
func (i *Interaction) Responses() []Response {
	i.s.mu.Lock()
	defer i.s.mu.Unlock()
	return append([]Response(nil), i.ix.responses...)
}

// WaitResponse waits for the first response and returns it.
func (i *Interaction) WaitResponse() (Response, error) {
	rs, err := i.WaitResponses(1)
	if err != nil {
		return Response{}, err
	}
	return rs[0], nil
}

// WaitResponses waits until there are at least n responses and returns
// them all.
func (i *Interaction) WaitResponses(n int) ([]Response, error) {
	var got []Response
	err := i.s.WaitFor(func() bool {
		got = i.Responses()
		return len(got) >= n
	}, fmt.Sprintf("%d responses to interaction %s", n, i.ix.describe()))
	return got, err
}

// Acked reports whether the interaction was acknowledged in time.
func (i *Interaction) Acked() bool {
	i.s.mu.Lock()
	defer i.s.mu.Unlock()
	return i.ix.acked
}

// Expired reports whether the deadline passed without an acknowledgement;
// from then on the callback answers 10062 Unknown interaction.
func (i *Interaction) Expired() bool {
	i.s.mu.Lock()
	defer i.s.mu.Unlock()
	return i.ix.expired
}

// WaitExpired waits until the deadline has passed without an
// acknowledgement.
func (i *Interaction) WaitExpired() error {
	return i.s.WaitFor(i.Expired, "interaction "+i.ix.describe()+" to expire")
}

// Original returns the original response message: the one made by a type
// 4 or 5 callback or, after a type 6 or 7 callback to a component, the
// message the component is on. ok is false before there is one.
func (i *Interaction) Original() (m Message, ok bool) {
	i.s.mu.Lock()
	defer i.s.mu.Unlock()
	if i.ix.original == nil {
		return Message{}, false
	}
	return i.ix.original.snapshot(), true
}

// Followups returns the follow-up messages that are not the original, in
// order.
func (i *Interaction) Followups() []Message {
	i.s.mu.Lock()
	defer i.s.mu.Unlock()
	out := make([]Message, 0, len(i.ix.followups))
	for _, m := range i.ix.followups {
		out = append(out, m.snapshot())
	}
	return out
}
