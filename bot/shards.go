package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"
	"golang.org/x/sync/errgroup"

	"github.com/callonbot/callon/master"
)

// DefaultIdentifyInterval is Discord's spacing of IDENTIFYs that share a
// max_concurrency bucket.
const DefaultIdentifyInterval = 5 * time.Second

// shard is one gateway connection of this process: a discordgo session
// identified as [id, count].
type shard struct {
	id int
	s  *discordgo.Session
	// up: connected (READY or RESUMED) and not disconnected since.
	up     atomic.Bool
	everUp atomic.Bool
}

// ShardOf returns the shard that receives a guild's events when the bot
// runs count shards: (guild_id >> 22) % count, as Discord routes them.
// A guild id that is not a snowflake goes to shard 0, like DMs.
func ShardOf(guildID string, count int) int {
	id, ok := master.ParseSnowflake(guildID)
	if !ok || count <= 1 {
		return 0
	}
	return int((id >> 22) % int64(count))
}

// plan decides the shards this process runs: the shard count (Discord's
// recommendation when Config.ShardCount is 0), which ids (Config.ShardIDs,
// else all), and the max_concurrency of IDENTIFYs. GET /gateway/bot is
// asked only when the count is automatic or several shards must be
// identified.
func (b *Bot) plan(ctx context.Context) (count int, ids []int, maxConcurrency int, err error) {
	count, maxConcurrency = b.cfg.ShardCount, 1
	opens := cmp.Or(len(b.cfg.ShardIDs), count) // how many this process identifies; 0: unknown yet
	if count == 0 || opens > 1 {
		gctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		gw, gerr := b.s.GatewayBot(discordgo.WithContext(gctx))
		cancel()
		switch {
		case gerr != nil && count == 0:
			return 0, nil, 0, fmt.Errorf("ask Discord for the shard count (GET /gateway/bot): %w", gerr)
		case gerr != nil:
			b.log.Warn("could not read max_concurrency from GET /gateway/bot; identifying one shard at a time", "err", gerr)
		default:
			if count == 0 {
				count = max(gw.Shards, 1)
			}
			maxConcurrency = max(gw.SessionStartLimit.MaxConcurrency, 1)
		}
	}
	ids = slices.Clone(b.cfg.ShardIDs)
	if len(ids) == 0 {
		for i := range count {
			ids = append(ids, i)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if last := ids[len(ids)-1]; ids[0] < 0 || last >= count {
		return 0, nil, 0, fmt.Errorf("DISCORD_SHARD_IDS: shard %d is not one of the %d shards (0 to %d)", last, count, count-1)
	}
	return count, ids, maxConcurrency, nil
}

// openShards connects every session (each with its ShardID set) and
// returns once all are connected or one failed. Sessions whose ShardID %
// maxConcurrency is equal share a bucket: Discord takes one IDENTIFY per
// bucket per interval, so within a bucket each session is opened
// interval after the previous one has READY; buckets go in parallel.
func openShards(ctx context.Context, sessions []*discordgo.Session, maxConcurrency int, interval time.Duration) error {
	maxConcurrency = max(maxConcurrency, 1)
	buckets := map[int][]*discordgo.Session{}
	for _, s := range sessions {
		k := s.ShardID % maxConcurrency
		buckets[k] = append(buckets[k], s)
	}
	g, ctx := errgroup.WithContext(ctx)
	for _, bucket := range buckets {
		slices.SortFunc(bucket, func(x, y *discordgo.Session) int { return cmp.Compare(x.ShardID, y.ShardID) })
		g.Go(func() error {
			for i, s := range bucket {
				if i > 0 {
					t := time.NewTimer(interval)
					select {
					case <-ctx.Done():
						t.Stop()
						return ctx.Err()
					case <-t.C:
					}
				}
				if err := s.Open(); err != nil {
					return fmt.Errorf("connect shard %d of %d to the Discord gateway: %w", s.ShardID, max(s.ShardCount, 1), err)
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// closeShards disconnects every session at once (discordgo's Close
// sleeps a second each) and stops their reconnecting.
func closeShards(sessions []*discordgo.Session, log func(shard int, err error)) {
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() {
			s.Lock() // discordgo reads it under the session lock while reconnecting
			s.ShouldReconnectOnError = false
			s.Unlock()
			if err := s.Close(); err != nil && !errors.Is(err, discordgo.ErrWSNotFound) {
				log(s.ShardID, err)
			}
		})
	}
	wg.Wait()
}

// shardOf finds the shard of a session of this bot.
func (b *Bot) shardOf(s *discordgo.Session) *shard {
	for _, sh := range b.shardList() {
		if sh.s == s {
			return sh
		}
	}
	return nil
}

func (b *Bot) shardList() []*shard {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.shards
}

// onConnect runs when a shard's connection is up (after READY or
// RESUMED), first or again.
func (b *Bot) onConnect(s *discordgo.Session, _ *discordgo.Connect) {
	sh := b.shardOf(s)
	if sh == nil {
		return
	}
	wasUp := sh.up.Swap(true)
	b.metrics.GatewayConnected(sh.id, true)
	if !wasUp && sh.everUp.Swap(true) {
		b.metrics.GatewayReconnected(sh.id)
		b.log.Info("gateway connected again", "shard", sh.id)
	}
}

// onDisconnect runs when a shard's connection is lost; discordgo
// reconnects by itself.
func (b *Bot) onDisconnect(s *discordgo.Session, _ *discordgo.Disconnect) {
	sh := b.shardOf(s)
	if sh == nil {
		return
	}
	if sh.up.Swap(false) && b.ctx.Err() == nil {
		b.log.Warn("gateway disconnected; reconnecting", "shard", sh.id)
	}
	b.metrics.GatewayConnected(sh.id, false)
}

// GatewayStatus reports whether every shard of this process is connected
// to the gateway; when not, down says what is not, for /readyz.
func (b *Bot) GatewayStatus() (up bool, down string) {
	shards := b.shardList()
	if len(shards) == 0 {
		return false, "not connected yet"
	}
	var ids []string
	for _, sh := range shards {
		if !sh.up.Load() {
			ids = append(ids, fmt.Sprint(sh.id))
		}
	}
	switch {
	case len(ids) == 0:
		return true, ""
	case len(shards) == 1:
		return false, "disconnected"
	}
	return false, "shards " + strings.Join(ids, ", ") + " disconnected"
}

// GuildName is a guild's name as the gateway told this process ("" when
// none of its shards has the guild): for people, never for decisions.
func (b *Bot) GuildName(guildID string) string {
	for _, sh := range b.shardList() {
		if g, err := sh.s.State.Guild(guildID); err == nil && g != nil {
			return g.Name
		}
	}
	return ""
}
