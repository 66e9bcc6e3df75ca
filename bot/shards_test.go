package bot

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
)

func TestRouteNames(t *testing.T) {
	t.Parallel()
	tests := []struct{ method, path, want string }{
		{"POST", "/api/v9/channels/123456789012345678/messages", "POST /channels/{id}/messages"},
		{"PATCH", "/api/v9/channels/1/messages/2", "PATCH /channels/{id}/messages/{id}"},
		{"PUT", "/api/v9/channels/1/messages/2/reactions/%E2%8F%B3/@me", "PUT /channels/{id}/messages/{id}/reactions/{emoji}/@me"},
		{"POST", "/api/v9/interactions/99/aW50ZXJhY3Rpb246OTk6c2VjcmV0/callback", "POST /interactions/{id}/{token}/callback"},
		{"PATCH", "/api/v9/webhooks/7/tok-en_123/messages/@original", "PATCH /webhooks/{id}/{token}/messages/@original"},
		{"PUT", "/api/v9/applications/5/guilds/6/commands", "PUT /applications/{id}/guilds/{id}/commands"},
		{"GET", "/api/v9/gateway/bot", "GET /gateway/bot"},
		{"GET", "/api/v10/users/@me", "GET /users/@me"},
		{"GET", "/proxy/channels/1", "GET /proxy/channels/{id}"},
		{"GET", "/api/v9/invites/" + strings.Repeat("x", 40), "GET /invites/{}"},
	}
	for _, tc := range tests {
		if got := routeName(tc.method, tc.path); got != tc.want {
			t.Errorf("routeName(%s %s) = %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestShardOfMatchesDiscord(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t, discordtest.WithGuild("A"), discordtest.WithGuild("B"), discordtest.WithGuild("C"))
	for _, g := range dc.GuildIDs() {
		for _, n := range []int{1, 2, 3, 7} {
			if got, want := ShardOf(g, n), discordtest.ShardOf(g, n); got != want {
				t.Errorf("ShardOf(%s, %d) = %d, want %d", g, n, got, want)
			}
		}
	}
	if ShardOf("not-a-snowflake", 4) != 0 {
		t.Error("a guild id that is not a snowflake should go to shard 0")
	}
}

// shardSessions makes unopened sessions for shards ids of count.
func shardSessions(t *testing.T, dc *discordtest.Server, count int, ids ...int) []*discordgo.Session {
	t.Helper()
	var out []*discordgo.Session
	for _, id := range ids {
		s, err := NewSession(dc.Token(), dc.URL(), Intents)
		if err != nil {
			t.Fatal(err)
		}
		s.ShardID, s.ShardCount = id, count
		out = append(out, s)
	}
	t.Cleanup(func() { closeShards(out, func(int, error) {}) })
	return out
}

// Shards whose id % max_concurrency is equal share a bucket: within a
// bucket they identify in id order, at least the interval apart; buckets
// do not wait for each other.
func TestShardsIdentifyPerBucket(t *testing.T) {
	t.Parallel()
	const interval = 250 * time.Millisecond
	dc := discordtest.New(t, discordtest.WithMaxConcurrency(2))
	sessions := shardSessions(t, dc, 4, 3, 2, 1, 0)
	if err := openShards(t.Context(), sessions, 2, interval); err != nil {
		t.Fatal(err)
	}
	log := dc.IdentifyLog()
	if len(log) != 4 {
		t.Fatalf("got %d IDENTIFYs, want 4: %+v", len(log), log)
	}
	at := map[int]time.Time{}
	for _, id := range log {
		if id.CloseCode != 0 || id.Shard[1] != 4 {
			t.Fatalf("IDENTIFY %+v: want shard [n, 4] accepted", id)
		}
		at[id.Shard[0]] = id.At
	}
	for _, pair := range [][2]int{{0, 2}, {1, 3}} {
		if gap := at[pair[1]].Sub(at[pair[0]]); gap < interval {
			t.Errorf("shard %d identified %s after shard %d, in the same bucket: want at least %s", pair[1], gap, pair[0], interval)
		}
	}

	// With a bucket per shard, no one waits: an hour's interval would
	// show.
	dc = discordtest.New(t, discordtest.WithMaxConcurrency(4))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := openShards(ctx, shardSessions(t, dc, 4, 0, 1, 2, 3), 4, time.Hour); err != nil {
		t.Fatal(err)
	}
	if n := len(dc.IdentifyLog()); n != 4 {
		t.Errorf("got %d IDENTIFYs, want 4", n)
	}
}

func TestShardPlan(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t, discordtest.WithRecommendedShards(3), discordtest.WithMaxConcurrency(2))
	plan := func(cfg Config) (int, []int, int, error) {
		t.Helper()
		s, err := NewSession(dc.Token(), dc.URL(), Intents)
		if err != nil {
			t.Fatal(err)
		}
		b := &Bot{cfg: cfg, s: s, log: slog.New(slog.DiscardHandler)}
		return b.plan(t.Context())
	}
	count, ids, mc, err := plan(Config{ShardCount: 1})
	if err != nil || count != 1 || !slices.Equal(ids, []int{0}) || mc != 1 {
		t.Errorf("unsharded: got %d %v %d %v, want 1 [0] 1", count, ids, mc, err)
	}
	if n := dc.Calls(discordtest.RouteGetGatewayBot); n != 0 {
		t.Errorf("unsharded, GET /gateway/bot was called %d times, want none", n)
	}
	count, ids, mc, err = plan(Config{ShardCount: 0})
	if err != nil || count != 3 || !slices.Equal(ids, []int{0, 1, 2}) || mc != 2 {
		t.Errorf("auto: got %d %v %d %v, want 3 [0 1 2] 2", count, ids, mc, err)
	}
	count, ids, _, err = plan(Config{ShardCount: 0, ShardIDs: []int{2}})
	if err != nil || count != 3 || !slices.Equal(ids, []int{2}) {
		t.Errorf("auto, shard 2 only: got %d %v %v, want 3 [2]", count, ids, err)
	}
	if _, _, _, err := plan(Config{ShardCount: 0, ShardIDs: []int{1, 3}}); err == nil || !strings.Contains(err.Error(), "shard 3 is not one of the 3 shards") {
		t.Errorf("auto, shard 3 of 3: got %v, want an error naming the shard", err)
	}
}
