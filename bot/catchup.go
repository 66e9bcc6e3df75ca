package bot

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// onReady runs at every new gateway session (not after a resume, which
// replays what was missed): what was posted meanwhile in the team threads
// of the shard's guilds is caught up. Each shard catches up its own
// guilds, wherever their shards run.
func (b *Bot) onReady(s *discordgo.Session, r *discordgo.Ready) {
	ready := time.Now()
	shardID, count := s.ShardID, s.ShardCount
	log := b.log.With("shard", shardID)
	log.Debug("gateway ready", "session", r.SessionID, "guilds", len(r.Guilds))
	var handles func(guildID string) bool
	if count > 1 {
		handles = func(guildID string) bool { return ShardOf(guildID, count) == shardID }
	}
	b.goBackground(10*time.Minute, func(ctx context.Context) {
		n, err := b.svc.CatchUp(ctx, b, ready, handles)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("catch up on missed messages", "recorded", n, "err", err)
		case n > 0:
			log.Info("caught up on missed messages", "recorded", n)
		default:
			log.Debug("caught up: nothing was missed")
		}
	})
}

var _ master.ThreadReader = (*Bot)(nil)

// MessagesAfter reads up to limit messages of a channel posted after the
// message id after, oldest first, a page of 100 at a time.
func (b *Bot) MessagesAfter(ctx context.Context, channelID, after string, limit int) ([]master.Incoming, error) {
	var out []master.Incoming
	self := selfID(b.s)
	for len(out) < limit {
		page, err := b.s.ChannelMessages(channelID, min(100, limit-len(out)), "", after, "", discordgo.WithContext(ctx))
		if err != nil {
			return out, fmt.Errorf("read messages of %s: %w", channelID, err)
		}
		slices.SortFunc(page, func(x, y *discordgo.Message) int {
			a, _ := master.ParseSnowflake(x.ID)
			b, _ := master.ParseSnowflake(y.ID)
			return cmp.Compare(a, b)
		})
		for _, m := range page {
			in := master.Incoming{ID: m.ID, GuildID: m.GuildID, ChannelID: channelID, Content: m.Content,
				Attachments: incomingAttachments(m.Attachments)}
			if m.Author != nil {
				in.AuthorID, in.AuthorBot = m.Author.ID, m.Author.Bot
				// Before READY the bot's own id is unknown: then no bot's
				// message is taken, so never its own.
				in.FromSelf = m.Author.ID == self || (self == "" && m.Author.Bot) || b.personas.own(m.WebhookID)
			}
			out = append(out, in)
		}
		if len(page) < 100 {
			break
		}
		after = page[len(page)-1].ID
	}
	return out, nil
}

// ActiveThreads returns the latest message id of each of a guild's
// threads that are not archived, by thread id: one request.
func (b *Bot) ActiveThreads(ctx context.Context, guildID string) (map[string]string, error) {
	list, err := b.s.GuildThreadsActive(guildID, discordgo.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("active threads of %s: %w", guildID, err)
	}
	out := make(map[string]string, len(list.Threads))
	for _, t := range list.Threads {
		out[t.ID] = t.LastMessageID
	}
	return out, nil
}

// onThreadUpdate puts a thread's team to sleep when Discord archived the
// thread (it does so after the thread's auto-archive time without a
// message): a dormant team counts against no cap, and the next message
// in the thread, which unarchives it, wakes the team.
func (b *Bot) onThreadUpdate(_ *discordgo.Session, u *discordgo.ThreadUpdate) {
	if u.Channel == nil || u.ThreadMetadata == nil || !u.ThreadMetadata.Archived {
		return
	}
	id := u.ID
	b.goBackground(time.Minute, func(ctx context.Context) {
		slept, err := b.svc.ThreadArchived(ctx, id)
		switch {
		case err != nil && ctx.Err() == nil:
			b.log.Warn("put the team of an archived thread to sleep", "thread_id", id, "err", err)
		case slept:
			b.log.Info("team went dormant: its thread was archived", "thread_id", id)
		}
	})
}

// MemberRoles returns a member's role ids in a guild, read over REST;
// master.ErrNotFound when the user is not a member.
func (b *Bot) MemberRoles(ctx context.Context, guildID, userID string) ([]string, error) {
	m, err := b.s.GuildMember(guildID, userID, discordgo.WithContext(ctx))
	if err != nil {
		if code := discordCode(err); code == codeUnknownMember || code == codeUnknownUser {
			return nil, master.ErrNotFound
		}
		return nil, fmt.Errorf("look up member %s: %w", userID, err)
	}
	return m.Roles, nil
}
