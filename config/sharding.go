package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// maxShards bounds DISCORD_SHARD_COUNT and the shard ids: far beyond any
// bot (Discord recommends one shard per 1,000 guilds or so).
const maxShards = 10000

// Sharding splits the bot's gateway connections (docs/operating.md, "Sharding").
type Sharding struct {
	// Count is DISCORD_SHARD_COUNT: the shards over all processes, 1 by
	// default (one unsharded connection); 0 ("auto") takes Discord's
	// recommendation from GET /gateway/bot.
	Count int
	// IDs is DISCORD_SHARD_IDS: the shards this process connects, sorted;
	// nil means all of them.
	IDs []int
}

func (p *parser) sharding() Sharding {
	sh := Sharding{Count: 1}
	switch s := strings.ToLower(strings.TrimSpace(p.getenv("DISCORD_SHARD_COUNT"))); s {
	case "":
	case "auto":
		sh.Count = 0
	default:
		sh.Count = p.int("DISCORD_SHARD_COUNT", 1, 1, maxShards)
	}
	s := strings.TrimSpace(p.getenv("DISCORD_SHARD_IDS"))
	if s == "" {
		return sh
	}
	ids, err := parseShardIDs(s)
	switch {
	case err != nil:
		p.fail("DISCORD_SHARD_IDS", "%v, in %q (want ids and ranges such as \"0,2,4-7\")", err, s)
	case sh.Count > 0 && ids[len(ids)-1] >= sh.Count:
		p.fail("DISCORD_SHARD_IDS", "shard %d is not below DISCORD_SHARD_COUNT (%d): shards are numbered from 0", ids[len(ids)-1], sh.Count)
	default:
		sh.IDs = ids
	}
	return sh
}

// parseShardIDs reads "0,2,4-7" into sorted, distinct ids.
func parseShardIDs(s string) ([]int, error) {
	var ids []int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := shardID(lo)
		if err != nil {
			return nil, err
		}
		b := a
		if isRange {
			if b, err = shardID(hi); err != nil {
				return nil, err
			}
			if b < a {
				return nil, fmt.Errorf("range %q runs backwards", part)
			}
		}
		for id := a; id <= b; id++ {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

func shardID(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n >= maxShards {
		return 0, fmt.Errorf("%q is not a shard id (0 to %d)", s, maxShards-1)
	}
	return n, nil
}

// String describes the sharding: "1", "auto", or "4 (this process: 0,1)".
func (sh Sharding) String() string {
	count := strconv.Itoa(sh.Count)
	if sh.Count == 0 {
		count = "auto"
	}
	if sh.IDs == nil {
		return count
	}
	ids := make([]string, len(sh.IDs))
	for i, id := range sh.IDs {
		ids[i] = strconv.Itoa(id)
	}
	return count + " (this process: " + strings.Join(ids, ",") + ")"
}
