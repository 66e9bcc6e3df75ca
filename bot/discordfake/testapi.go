package discordfake

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/bwmarrin/discordgo"
)

// URL returns the base URL to give the bot as its Discord API URL
// (DISCORD_API_URL); it has no /api/v9 suffix.
func (s *Server) URL() string { return s.url }

// Token returns the bot token the server accepts, without "Bot ".
func (s *Server) Token() string { return s.cfg.token }

// AppID returns the application id.
func (s *Server) AppID() string { return s.cfg.appID }

// BotUserID returns the bot user's id.
func (s *Server) BotUserID() string { return s.bot.id }

// UserID returns the id of the default human user, "alice".
func (s *Server) UserID() string { return s.human }

// AddUser adds a human user and returns its id.
func (s *Server) AddUser(name string) string { return s.addUser(name, false) }

// AddBot adds another bot user, whose messages have author.bot set, and
// returns its id.
func (s *Server) AddBot(name string) string { return s.addUser(name, true) }

// GuildID returns the first guild's id.
func (s *Server) GuildID() string { return s.guilds[0].id }

// GuildIDs returns every guild's id, in the order of the options.
func (s *Server) GuildIDs() []string {
	ids := make([]string, 0, len(s.guilds))
	for _, g := range s.guilds {
		ids = append(ids, g.id)
	}
	return ids
}

// ChannelID returns the id of the channel or thread with the given name,
// searching guilds in order. It panics if there is none: a typo in a test.
func (s *Server) ChannelID(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.sortedChannelsLocked() {
		if c.name == name {
			return c.id
		}
	}
	panic(fmt.Sprintf("discordtest: no channel named %q", name))
}

// sortedChannelsLocked returns channels and threads oldest first.
func (s *Server) sortedChannelsLocked() []*channel {
	out := make([]*channel, 0, len(s.channels))
	for _, c := range s.channels {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *channel) int { return cmp.Compare(snowflake(a.id), snowflake(b.id)) })
	return out
}

// Post is a message posted by a user (or another bot).
type Post struct {
	ChannelID string
	AuthorID  string // default: UserID(); see AddUser and AddBot
	Content   string // may be empty when there are attachments
	ReplyTo   string // id of a message in the same channel
	// Attachments are served by the fake CDN; see CDNURL and
	// AttachmentDownloads.
	Attachments []UserAttachment
}

// Post stores a user's message and dispatches MESSAGE_CREATE. Posting in
// an archived, unlocked thread unarchives it, as on Discord. It panics on
// an unknown channel or reply target.
func (s *Server) Post(p Post) Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channels[p.ChannelID]
	if c == nil {
		panic(fmt.Sprintf("discordtest: post to unknown channel %q", p.ChannelID))
	}
	content := p.Content
	mb := &messageBody{Content: &content}
	if p.ReplyTo != "" {
		if ref := s.messages[p.ReplyTo]; ref == nil || ref.channelID != c.id {
			panic(fmt.Sprintf("discordtest: reply to unknown message %q in channel %q", p.ReplyTo, c.id))
		}
		mb.Reference = &discordgo.MessageReference{MessageID: p.ReplyTo}
	}
	if c.isThread() && c.archived && !c.locked {
		c.archived, c.archivedAt = false, time.Now()
		s.dispatchLocked("THREAD_UPDATE", s.channelJSONLocked(c))
	}
	files := make([]Attachment, 0, len(p.Attachments))
	for _, a := range p.Attachments {
		files = append(files, Attachment{Filename: a.Filename, ContentType: a.ContentType, Data: a.Data})
	}
	m := s.newMessageLocked(c, s.userLocked(cmp.Or(p.AuthorID, s.human)), mb, files)
	s.storeLocked(m)
	s.dispatchLocked("MESSAGE_CREATE", s.messageJSONLocked(m, true))
	return m.snapshot()
}

// UserMessage posts content as userID in a channel; see Post.
func (s *Server) UserMessage(channelID, userID, content string) Message {
	return s.Post(Post{ChannelID: channelID, AuthorID: userID, Content: content})
}

// UserMessageWith posts a message with attachments as userID in a
// channel; text may be empty. The MESSAGE_CREATE carries each attachment's
// id, filename, size, content_type, url (on CDNURL()) and proxy_url (on
// MediaURL()).
func (s *Server) UserMessageWith(channelID, userID, text string, attachments ...UserAttachment) Message {
	return s.Post(Post{ChannelID: channelID, AuthorID: userID, Content: text, Attachments: attachments})
}

// Redeliver dispatches MESSAGE_CREATE again for a stored message, with the
// same id, as Discord may after a reconnect.
func (s *Server) Redeliver(msg Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[msg.ID]
	if m == nil {
		panic(fmt.Sprintf("discordtest: redeliver unknown message %q", msg.ID))
	}
	s.dispatchLocked("MESSAGE_CREATE", s.messageJSONLocked(m, true))
}

// Messages returns a channel's messages in order, the bot's included;
// deleted and ephemeral ones are left out.
func (s *Server) Messages(channelID string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.byChan[channelID] {
		if !m.deleted {
			out = append(out, m.snapshot())
		}
	}
	return out
}

// Message returns a message of a channel, deleted or ephemeral ones too.
func (s *Server) Message(channelID, id string) (Message, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.messages[id]
	if m == nil || m.channelID != channelID {
		return Message{}, false
	}
	return m.snapshot(), true
}

// Channel returns a channel or thread.
func (s *Server) Channel(id string) (Channel, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channels[id]
	if c == nil {
		return Channel{}, false
	}
	return s.channelSnapshotLocked(c), true
}

// Threads returns the threads of a channel, oldest first, archived ones
// included.
func (s *Server) Threads(parentID string) []Channel {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Channel
	for _, c := range s.sortedChannelsLocked() {
		if c.isThread() && c.parentID == parentID {
			out = append(out, s.channelSnapshotLocked(c))
		}
	}
	return out
}

// AddThread creates a thread started by UserID() in a channel, which the
// bot has not joined, and dispatches THREAD_CREATE. typ is
// discordgo.ChannelTypeGuildPublicThread or ChannelTypeGuildPrivateThread.
func (s *Server) AddThread(parentID, name string, typ discordgo.ChannelType) Channel {
	s.mu.Lock()
	defer s.mu.Unlock()
	parent := s.channels[parentID]
	if parent == nil || parent.isThread() {
		panic(fmt.Sprintf("discordtest: no text channel %q", parentID))
	}
	t := s.newThreadLocked(s.newID(), parent, s.human, threadRequest{Name: name, AutoArchiveDuration: 1440, Type: typ})
	return s.channelSnapshotLocked(t)
}

// ArchiveThread archives a thread, as Discord does after inactivity, and
// dispatches THREAD_UPDATE. Posting to it then fails with 50083.
func (s *Server) ArchiveThread(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.channels[id]
	if c == nil || !c.isThread() {
		panic(fmt.Sprintf("discordtest: no thread %q", id))
	}
	c.archived, c.archivedAt = true, time.Now()
	s.dispatchLocked("THREAD_UPDATE", s.channelJSONLocked(c))
}

// SetChannelPermissionsDenied takes SEND_MESSAGES and thread creation away
// from the bot in a channel and its threads: posting, typing and starting
// threads there answer 403 with code 50013 (Missing Permissions).
func (s *Server) SetChannelPermissionsDenied(channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denied[channelID] = true
	s.notifyLocked()
}

// Typing returns how many typing indicators the bot triggered in a channel.
func (s *Server) Typing(channelID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.typing[channelID]
}

// Commands returns the commands registered in a guild, or the global ones
// for guildID "", as Discord returns them.
func (s *Server) Commands(guildID string) []*discordgo.ApplicationCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*discordgo.ApplicationCommand
	for _, c := range s.commands[guildID] {
		data, _ := json.Marshal(c.raw)
		var cmd discordgo.ApplicationCommand
		_ = json.Unmarshal(data, &cmd)
		out = append(out, &cmd)
	}
	return out
}
