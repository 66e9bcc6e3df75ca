package discordfake

import (
	"slices"
	"strings"
	"unicode"
)

// maxReactions is how many different emoji a message can carry.
const maxReactions = 20

type reaction struct {
	emoji string
	users []string // in the order they reacted
	me    bool     // the bot is one of them
}

// Reaction is one emoji on a message.
type Reaction struct {
	Emoji string // the unicode emoji
	Count int    // users who reacted with it
	Me    bool   // the bot is one of them
}

func (m *message) reactionsSnapshot() []Reaction {
	var out []Reaction
	for _, r := range m.reactions {
		out = append(out, Reaction{Emoji: r.emoji, Count: len(r.users), Me: r.me})
	}
	return out
}

// addReaction is PUT /channels/{c}/messages/{m}/reactions/{emoji}/@me,
// the emoji URL-encoded. Reacting twice changes nothing; both answer 204.
func (s *Server) addReaction(r *request) (int, any, *apiError) {
	m, emoji, e := s.reactionTargetLocked(r)
	if e != nil {
		return fail(e)
	}
	if e := s.reactLocked(m, s.bot.id, emoji); e != nil {
		return fail(e)
	}
	return noContent()
}

// removeReaction is DELETE …/reactions/{emoji}/@me; removing a reaction
// the bot did not make answers 204 too.
func (s *Server) removeReaction(r *request) (int, any, *apiError) {
	m, emoji, e := s.reactionTargetLocked(r)
	if e != nil {
		return fail(e)
	}
	for i, re := range m.reactions {
		if re.emoji != emoji || !re.me {
			continue
		}
		re.users = slices.DeleteFunc(re.users, func(id string) bool { return id == s.bot.id })
		re.me = false
		if len(re.users) == 0 {
			m.reactions = slices.Delete(m.reactions, i, i+1)
		}
		s.dispatchLocked("MESSAGE_REACTION_REMOVE", map[string]any{
			"user_id": s.bot.id, "channel_id": m.channelID, "message_id": m.id, "guild_id": m.guildID,
			"emoji": emojiJSON(emoji), "burst": false, "type": 0,
		})
		break
	}
	return noContent()
}

// reactionTargetLocked finds the message and emoji of a reaction route.
// Custom emoji ("name:id") answer 10014 Unknown Emoji, since the fake
// guilds have none; so does text that cannot be a unicode emoji.
func (s *Server) reactionTargetLocked(r *request) (*message, string, *apiError) {
	c, m, e := s.channelMessageLocked(r)
	if e != nil {
		return nil, "", e
	}
	if c.isThread() && c.archived {
		return nil, "", errThreadArchived()
	}
	emoji := r.PathValue("emoji")
	if !unicodeEmoji(emoji) {
		return nil, "", errUnknownEmoji()
	}
	return m, emoji, nil
}

// unicodeEmoji tells a plausible unicode emoji from a name such as
// "thumbsup" or a custom emoji such as "callon:123": every unicode emoji,
// keycaps like "#⃣" included, has a rune outside ASCII.
func unicodeEmoji(s string) bool {
	if s == "" || strings.Contains(s, ":") || len(s) > 64 {
		return false
	}
	return strings.IndexFunc(s, func(r rune) bool { return r > unicode.MaxASCII }) >= 0
}

// reactLocked adds userID's reaction and dispatches MESSAGE_REACTION_ADD.
func (s *Server) reactLocked(m *message, userID, emoji string) *apiError {
	var re *reaction
	for _, x := range m.reactions {
		if x.emoji == emoji {
			re = x
		}
	}
	if re == nil {
		if len(m.reactions) >= maxReactions {
			return &apiError{status: 400, Code: 30010, Message: "Maximum number of reactions reached (20)"}
		}
		re = &reaction{emoji: emoji}
		m.reactions = append(m.reactions, re)
	}
	if slices.Contains(re.users, userID) {
		return nil
	}
	re.users = append(re.users, userID)
	re.me = re.me || userID == s.bot.id
	member := memberJSON(m.created)
	member["user"] = userJSON(s.userLocked(userID))
	s.dispatchLocked("MESSAGE_REACTION_ADD", map[string]any{
		"user_id": userID, "channel_id": m.channelID, "message_id": m.id, "guild_id": m.guildID,
		"member": member, "emoji": emojiJSON(emoji), "message_author_id": m.author.id, "burst": false, "type": 0,
	})
	return nil
}

func emojiJSON(emoji string) map[string]any {
	return map[string]any{"id": nil, "name": emoji}
}

// reactionsJSON is a message's reactions field, as seen by the bot.
func (s *Server) reactionsJSON(m *message) []any {
	out := make([]any, 0, len(m.reactions))
	for _, r := range m.reactions {
		out = append(out, map[string]any{
			"count":         len(r.users),
			"count_details": map[string]int{"burst": 0, "normal": len(r.users)},
			"me":            r.me,
			"me_burst":      false,
			"burst_colors":  []string{},
			"emoji":         emojiJSON(r.emoji),
		})
	}
	return out
}

// React adds a user's reaction to a message and dispatches
// MESSAGE_REACTION_ADD (to sessions with GUILD_MESSAGE_REACTIONS). It
// panics on an unknown message or an emoji the fake does not take.
func (s *Server) React(channelID, messageID, userID, emoji string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[messageID]
	if m == nil || m.deleted || m.channelID != channelID || !unicodeEmoji(emoji) {
		panic("discordtest: cannot react with " + emoji + " to message " + messageID + " in channel " + channelID)
	}
	if e := s.reactLocked(m, userID, emoji); e != nil {
		panic("discordtest: react: " + e.Message)
	}
}
