package discordfake

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"
)

// ClickButton describes a user clicking a button on a message.
type ClickButton struct {
	MessageID   string
	CustomID    string
	ChannelID   string // optional; when set, the message must be in this channel
	UserID      string // default: UserID()
	Permissions int64  // the member's permissions in the channel
	Locale      string // the user's client locale; default en-US
	GuildLocale string // the guild's preferred locale; default en-US
}

// ClickButton dispatches INTERACTION_CREATE for a click on a button (type
// 3, MESSAGE_COMPONENT), with data.custom_id, data.component_type 2 and
// the message the button is on. It fails (returns an error) when the message does
// not exist or has no enabled button with that custom_id, since no user
// could click it; an ephemeral message can be clicked only by the user it
// was shown to. The bot may answer with callback types 4, 5, 6 (deferred
// update), 7 (update the message) or 9 (a modal), within the deadline and
// once, as for a slash command.
func (s *Server) ClickButton(cb ClickButton) (*Interaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := checkLocales(cb.Locale, cb.GuildLocale); err != nil {
		return nil, fmt.Errorf("click %s: %v", cb.CustomID, err)
	}
	m := s.messages[cb.MessageID]
	if m == nil || m.deleted || (cb.ChannelID != "" && m.channelID != cb.ChannelID) {
		return nil, fmt.Errorf("click %s: no message %s in channel %q", cb.CustomID, cb.MessageID, cb.ChannelID)
	}
	snap := m.snapshot()
	b, found := snap.Button(cb.CustomID)
	if !found || b.Disabled {
		var have []string
		for _, b := range snap.Buttons() {
			if b.CustomID != "" && !b.Disabled {
				have = append(have, b.CustomID)
			}
		}
		return nil, fmt.Errorf("click %s: message %s has no enabled button with that custom_id (enabled: %s)", cb.CustomID, m.id, strings.Join(have, ", "))
	}
	if clicker := cmp.Or(cb.UserID, s.human); m.ephemeral && m.ix != nil && m.ix.user.id != clicker {
		return nil, fmt.Errorf("click %s: message %s is ephemeral, shown only to %s", cb.CustomID, m.id, m.ix.user.id)
	}

	ix := s.newInteractionLocked(invocation{
		typ:         discordgo.InteractionMessageComponent,
		channel:     s.channels[m.channelID],
		userID:      cb.UserID,
		perms:       cb.Permissions,
		locale:      cb.Locale,
		guildLocale: cb.GuildLocale,
	})
	ix.customID, ix.message = cb.CustomID, m
	return s.dispatchInteractionLocked(ix, map[string]any{
		"custom_id":      cb.CustomID,
		"component_type": int(discordgo.ButtonComponent),
	}), nil
}
