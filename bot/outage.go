package bot

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/internal/proc"
	"github.com/callonbot/callon/master"
)

// maxRetrying bounds the messages kept in memory, each retried on its
// own goroutine, while the database refuses them. Beyond, a message is
// not kept: once the database takes one again, the threads of its shard
// are caught up from Discord, which still has it.
const maxRetrying = 32

// outage is what the bot keeps of the messages the database refused.
type outage struct {
	mu       sync.Mutex
	retrying int
	lost     map[int]int // shard id → shard count, of shards whose messages were not kept
}

// keep takes a slot to retry a message in, or records that a message of
// the shard was not kept.
func (o *outage) keep(shardID, shardCount int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.retrying < maxRetrying {
		o.retrying++
		return true
	}
	if o.lost == nil {
		o.lost = map[int]int{}
	}
	o.lost[shardID] = shardCount
	return false
}

// done gives a slot back; recovered says the database took the message,
// and then returns the shards to catch up (each once).
func (o *outage) done(recovered bool) map[int]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.retrying--
	if !recovered || len(o.lost) == 0 {
		return nil
	}
	lost := o.lost
	o.lost = nil
	return lost
}

// retryRoute routes a message the database refused, in the background
// with backoff, until it is taken or the bot stops; at most maxRetrying
// at once (see outage).
func (b *Bot) retryRoute(s *discordgo.Session, log *slog.Logger, in master.Incoming) {
	if !b.outage.keep(s.ShardID, s.ShardCount) {
		log.Warn("message not kept for retry: too many wait for the database; its thread is caught up once the database is back")
		return
	}
	// The turn is idempotent on its id, and turns are answered in message
	// order whenever they are recorded. If the bot stops first, the
	// catch-up at the next start finds the message.
	b.goBackground(0, func(ctx context.Context) {
		for n := 1; ; n++ {
			t := time.NewTimer(proc.Backoff(n, time.Second, time.Minute))
			select {
			case <-ctx.Done():
				t.Stop()
				b.outage.done(false)
				log.Warn("message not routed before stopping; the next start catches it up")
				return
			case <-t.C:
			}
			if b.route(ctx, log, in) == nil {
				for shard, count := range b.outage.done(true) {
					b.catchUpShard(shard, count)
				}
				return
			}
		}
	})
}

// catchUpShard reads what the threads of a shard's guilds missed, as at a
// new gateway session.
func (b *Bot) catchUpShard(shardID, count int) {
	var handles func(guildID string) bool
	if count > 1 {
		handles = func(guildID string) bool { return ShardOf(guildID, count) == shardID }
	}
	log := b.log.With("shard", shardID)
	b.goBackground(10*time.Minute, func(ctx context.Context) {
		n, err := b.svc.CatchUp(ctx, b, time.Now(), handles)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("catch up on the messages not kept during the database's outage", "recorded", n, "err", err)
		default:
			log.Info("caught up on the messages not kept during the database's outage", "recorded", n)
		}
	})
}
