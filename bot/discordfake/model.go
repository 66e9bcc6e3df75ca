package discordfake

import (
	"encoding/json"
	"time"

	"github.com/bwmarrin/discordgo"
)

// The server's own records. Test code sees copies: Message and Channel.

type user struct {
	id   string
	name string
	bot  bool
}

type guild struct {
	id       string
	name     string
	created  time.Time
	channels []string            // text channel ids in position order
	roles    []role              // besides @everyone, whose id is the guild's
	members  map[string][]string // user id to role ids
	// botRole is the bot's own role, managed by Discord, with the
	// permissions of its invite (botPermissions), as Discord gives a bot
	// invited with permissions.
	botRole string
}

type channel struct {
	id          string
	guildID     string
	name        string
	typ         discordgo.ChannelType
	position    int
	parentID    string
	ownerID     string
	archived    bool
	locked      bool
	invitable   bool
	autoArchive int
	archivedAt  time.Time
	created     time.Time
	msgCount    int
	lastMsgID   string
	botJoined   bool
	overwrites  []Overwrite
}

func (c *channel) isThread() bool {
	return c.typ == discordgo.ChannelTypeGuildPublicThread || c.typ == discordgo.ChannelTypeGuildPrivateThread
}

type message struct {
	id          string
	channelID   string
	guildID     string
	author      user
	webhookID   string
	avatarURL   string // a webhook execution's avatar_url
	typ         discordgo.MessageType
	content     string
	embeds      []json.RawMessage
	components  []json.RawMessage
	attachments []Attachment
	ref         *discordgo.MessageReference
	allowed     json.RawMessage // allowed_mentions as sent
	nonce       string
	enforce     bool
	flags       discordgo.MessageFlags
	ix          *interaction // the interaction this message answers
	ephemeral   bool
	created     time.Time
	edited      time.Time
	history     []string
	deleted     bool
	threadID    string
	reactions   []*reaction
}

type command struct {
	guildID string
	def     *discordgo.ApplicationCommand // for option checks
	raw     map[string]any                // as returned by the API
}

// Message is a message as the server stores it: posted by a test, by the
// bot through REST, or as an interaction response.
type Message struct {
	ID              string
	ChannelID       string
	GuildID         string
	AuthorID        string
	AuthorName      string
	AuthorBot       bool
	Content         string
	Embeds          []*discordgo.MessageEmbed
	Components      []ActionRow // action rows as the bot sent them; see Buttons
	Attachments     []Attachment
	Reference       *discordgo.MessageReference
	AllowedMentions *discordgo.MessageAllowedMentions // nil when the bot sent none
	Nonce           string
	EnforceNonce    bool
	Flags           discordgo.MessageFlags
	InteractionID   string // set on interaction responses and follow-ups
	Ephemeral       bool
	Timestamp       time.Time
	Edits           int      // number of edits
	History         []string // content before each edit, oldest first
	Deleted         bool
	ThreadID        string     // the thread started from this message, if any
	Reactions       []Reaction // in the order they were first added
	// WebhookID is the channel webhook that posted the message (or the
	// application's id for an interaction's follow-up); AvatarURL the
	// avatar_url it gave. AuthorName is then the username it gave.
	WebhookID string
	AvatarURL string
}

// Attachment is a file uploaded with a message, by the bot or by a user.
type Attachment struct {
	ID          string
	Filename    string
	ContentType string
	Data        []byte
	URL         string // on CDNURL(), signed
	ProxyURL    string // on MediaURL(), signed
}

// Channel is a guild text channel or thread as the server stores it.
type Channel struct {
	ID                  string
	GuildID             string
	Name                string
	Type                discordgo.ChannelType
	ParentID            string // threads only
	OwnerID             string // threads only
	Archived            bool
	Locked              bool
	Invitable           bool
	AutoArchiveDuration int
	MessageCount        int
	BotJoined           bool // the bot is a member of this thread
	PermissionsDenied   bool // SetChannelPermissionsDenied was called
}

func (m *message) snapshot() Message {
	out := Message{
		ID:           m.id,
		ChannelID:    m.channelID,
		GuildID:      m.guildID,
		AuthorID:     m.author.id,
		AuthorName:   m.author.name,
		AuthorBot:    m.author.bot,
		Content:      m.content,
		Components:   parseRows(m.components),
		Attachments:  append([]Attachment(nil), m.attachments...),
		Nonce:        m.nonce,
		EnforceNonce: m.enforce,
		Flags:        m.flags,
		Ephemeral:    m.ephemeral,
		Timestamp:    m.created,
		Edits:        len(m.history),
		History:      append([]string(nil), m.history...),
		Deleted:      m.deleted,
		ThreadID:     m.threadID,
		Reactions:    m.reactionsSnapshot(),
		WebhookID:    m.webhookID,
		AvatarURL:    m.avatarURL,
	}
	for _, raw := range m.embeds {
		var e discordgo.MessageEmbed
		if json.Unmarshal(raw, &e) == nil {
			out.Embeds = append(out.Embeds, &e)
		}
	}
	if m.ref != nil {
		ref := *m.ref
		out.Reference = &ref
	}
	if len(m.allowed) > 0 && string(m.allowed) != "null" {
		var am discordgo.MessageAllowedMentions
		if json.Unmarshal(m.allowed, &am) == nil {
			out.AllowedMentions = &am
		}
	}
	if m.ix != nil {
		out.InteractionID = m.ix.id
	}
	return out
}

func (s *Server) channelSnapshotLocked(c *channel) Channel {
	return Channel{
		ID:                  c.id,
		GuildID:             c.guildID,
		Name:                c.name,
		Type:                c.typ,
		ParentID:            c.parentID,
		OwnerID:             c.ownerID,
		Archived:            c.archived,
		Locked:              c.locked,
		Invitable:           c.invitable,
		AutoArchiveDuration: c.autoArchive,
		MessageCount:        c.msgCount,
		BotJoined:           c.botJoined,
		PermissionsDenied:   s.denied[c.id],
	}
}
