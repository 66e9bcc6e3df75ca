package discordfake

import (
	"strconv"
	"time"
)

// guildIDPeriod is lcm(1, …, 16) milliseconds. Guild ids are snowflakes
// whose timestamps are a multiple of it plus the guild's index, so that
// guild i lands on shard i % n for every shard count n up to 16.
const guildIDPeriod = 720720

// guildID returns the id of the i-th guild: a snowflake from between
// 12 and 24 minutes ago, older than every id newID hands out, so the two
// never collide.
func guildID(i int, now time.Time) string {
	ms := now.UnixMilli() - discordEpoch
	base := ms/guildIDPeriod*guildIDPeriod - guildIDPeriod
	return strconv.FormatInt((base+int64(i))<<22, 10)
}

// ShardOf returns the shard that receives a guild's events when a bot runs
// count shards: (guild_id >> 22) % count, as on Discord. The fake's
// guilds, in the order of the WithGuild options, land on shards 0, 1, 2, …
// modulo count, for any count up to 16.
func ShardOf(guildID string, count int) int {
	if count < 1 {
		return 0
	}
	return int((snowflake(guildID) >> 22) % int64(count))
}

// onShard reports whether a session receives events of a guild; events
// without a guild (DMs) go to shard 0.
func (sess *gwSession) onShard(guildID string) bool {
	if guildID == "" {
		return sess.shard[0] == 0
	}
	return ShardOf(guildID, sess.shard[1]) == sess.shard[0]
}

// shardRefusal is the close code and reason for an invalid shard in an
// IDENTIFY, or 0: [id, count] needs count ≥ 1 and 0 ≤ id < count, and
// count must reach what WithShardingRequired asks.
func (s *Server) shardRefusal(shard [2]int) (int, string) {
	switch id, count := shard[0], shard[1]; {
	case count < 1 || id < 0 || id >= count:
		return 4010, "Invalid shard."
	case count < s.cfg.shardsRequired:
		return 4011, "Sharding required."
	}
	return 0, ""
}

// gatewayBotJSON is GET /gateway/bot: the recommended shard count and the
// session start limit, whose remaining count drops with every IDENTIFY.
func (s *Server) gatewayBotJSON() map[string]any {
	return map[string]any{
		"url":    s.gatewayURL(),
		"shards": s.cfg.recommendedShards,
		"session_start_limit": map[string]any{
			"total":           1000,
			"remaining":       max(0, 1000-s.stats.IdentifyAttempts),
			"reset_after":     (24 * time.Hour).Milliseconds(),
			"max_concurrency": s.cfg.maxConcurrency,
		},
	}
}
