package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// Channels gives the master what hand-back needs from Discord.
type Channels struct {
	s *discordgo.Session
}

var _ master.Channels = (*Channels)(nil)

// Channels returns the bot's Channels.
func (b *Bot) Channels() *Channels { return &Channels{s: b.s} }

// Resolve finds a channel of the guild from an id, a <#id> mention, or a
// #name (text channels only, case-insensitive).
func (c *Channels) Resolve(ctx context.Context, guildID, ref string) (master.Channel, error) {
	ref = strings.TrimSpace(ref)
	if id, ok := strings.CutPrefix(ref, "<#"); ok {
		ref = strings.TrimSuffix(id, ">")
	}
	if isSnowflake(ref) {
		ch, err := c.channel(ctx, ref)
		if err != nil {
			if code := discordCode(err); code == codeUnknownChannel || code == codeMissingAccess {
				return master.Channel{}, master.ErrNotFound
			}
			return master.Channel{}, err
		}
		if ch.GuildID != guildID {
			return master.Channel{}, master.ErrNotFound
		}
		return toChannel(ch), nil
	}
	name := strings.ToLower(strings.TrimPrefix(ref, "#"))
	chans, err := c.s.GuildChannels(guildID, discordgo.WithContext(ctx))
	if err != nil {
		return master.Channel{}, fmt.Errorf("list channels: %w", err)
	}
	for _, ch := range chans {
		if strings.ToLower(ch.Name) == name && (ch.Type == discordgo.ChannelTypeGuildText || ch.Type == discordgo.ChannelTypeGuildNews) {
			return toChannel(ch), nil
		}
	}
	return master.Channel{}, master.ErrNotFound
}

// channel reads a channel from the gateway state, or from REST.
func (c *Channels) channel(ctx context.Context, id string) (*discordgo.Channel, error) {
	if c.s.State != nil {
		if ch, err := c.s.State.Channel(id); err == nil {
			return ch, nil
		}
	}
	return c.s.Channel(id, discordgo.WithContext(ctx))
}

func toChannel(ch *discordgo.Channel) master.Channel {
	text := ch.Type == discordgo.ChannelTypeGuildText || ch.Type == discordgo.ChannelTypeGuildNews
	return master.Channel{ID: ch.ID, GuildID: ch.GuildID, Name: ch.Name, Thread: ch.IsThread(), ParentID: ch.ParentID,
		Other: !text && !ch.IsThread()}
}

func isSnowflake(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// StartThread opens a public thread (type 11 explicitly: omitted, Discord
// makes it private).
func (c *Channels) StartThread(ctx context.Context, channelID, name string) (string, error) {
	th, err := c.s.ThreadStartComplex(channelID, &discordgo.ThreadStart{
		Name: name, AutoArchiveDuration: 1440, Type: discordgo.ChannelTypeGuildPublicThread,
	}, discordgo.WithContext(ctx))
	if err != nil {
		return "", threadRefusal(channelID, classify(fmt.Errorf("start thread in %s: %w", channelID, err)))
	}
	return th.ID, nil
}

// threadRefusal says what permissions callon lacks when Discord refuses
// it a thread; other errors pass unchanged.
func threadRefusal(channelID string, err error) error {
	if code := discordCode(err); code == codeMissingPerms || code == codeMissingAccess {
		return &master.Error{Code: master.ENotAllowed, Err: err, Message: fmt.Sprintf("I can't open a thread in <#%s>. "+
			"I need the **Create Public Threads** and **Send Messages in Threads** permissions there.", channelID)}
	}
	return err
}

// CanPost probes whether the bot may post in a channel: the typing
// endpoint needs the same Send Messages permission and posts nothing.
func (c *Channels) CanPost(ctx context.Context, channelID string) error {
	if err := c.s.ChannelTyping(channelID, discordgo.WithContext(ctx)); err != nil {
		return classify(fmt.Errorf("check permissions in %s: %w", channelID, err))
	}
	return nil
}

var _ master.MessageThreads = (*Channels)(nil)

// codeThreadExists is Discord's answer to opening a second thread from a
// message.
const codeThreadExists = 160004

// StartThreadFrom opens a public thread from a message; its id is the
// message's. A thread opened already (before a crash, or by another
// process) counts as opened.
func (c *Channels) StartThreadFrom(ctx context.Context, channelID, messageID, name string) (string, error) {
	th, err := c.s.MessageThreadStartComplex(channelID, messageID, &discordgo.ThreadStart{
		Name: name, AutoArchiveDuration: 1440,
	}, discordgo.WithContext(ctx))
	switch {
	case discordCode(err) == codeThreadExists:
		return messageID, nil
	case err != nil:
		return "", threadRefusal(channelID, classify(fmt.Errorf("start thread from message %s: %w", messageID, err)))
	}
	return th.ID, nil
}
