package discordtest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/bot/discordtest"
)

// openShard opens a real discordgo session as shard id of count.
func openShard(t *testing.T, dc *discordtest.Server, id, count int) (*discordgo.Session, error) {
	t.Helper()
	s, err := bot.NewSession(dc.Token(), dc.URL(), allIntents)
	if err != nil {
		t.Fatal(err)
	}
	s.SyncEvents = true
	s.ShardID, s.ShardCount = id, count
	if err := s.Open(); err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		s.Lock()
		s.ShouldReconnectOnError = false
		s.Unlock()
		go func() { _ = s.Close() }()
	})
	return s, nil
}

func stateGuildIDs(s *discordgo.Session) []string {
	s.State.RLock()
	defer s.State.RUnlock()
	var ids []string
	for _, g := range s.State.Guilds {
		if !g.Unavailable {
			ids = append(ids, g.ID)
		}
	}
	return ids
}

func TestShardsGetOnlyTheirGuildsEvents(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t, discordtest.WithGuild("A", "a-general"), discordtest.WithGuild("B", "b-general"),
		discordtest.WithRecommendedShards(2), discordtest.WithMaxConcurrency(2))
	a, b := dc.GuildIDs()[0], dc.GuildIDs()[1]
	if discordtest.ShardOf(a, 2) != 0 || discordtest.ShardOf(b, 2) != 1 || discordtest.ShardOf(b, 3) != 1 {
		t.Fatalf("guilds %s and %s are on shards %d and %d, want 0 and 1", a, b, discordtest.ShardOf(a, 2), discordtest.ShardOf(b, 2))
	}

	s0, err := openShard(t, dc, 0, 2)
	if err != nil {
		t.Fatalf("open shard 0: %v", err)
	}
	gw, err := s0.GatewayBot()
	if err != nil || gw.Shards != 2 || gw.SessionStartLimit.MaxConcurrency != 2 || gw.SessionStartLimit.Remaining != 999 || gw.SessionStartLimit.Total != 1000 {
		t.Errorf("got /gateway/bot %+v, %v; want 2 shards, concurrency 2, 999 of 1000 starts left", gw, err)
	}
	s1, err := openShard(t, dc, 1, 2)
	if err != nil {
		t.Fatalf("open shard 1: %v", err)
	}
	in0, in1 := watchMessages(s0), watchMessages(s1)
	got0, got1 := interactions(s0), interactions(s1)
	dc.WaitFor(t, func() bool { return len(stateGuildIDs(s0)) == 1 && len(stateGuildIDs(s1)) == 1 }, "each shard's GUILD_CREATE")
	if g0, g1 := stateGuildIDs(s0), stateGuildIDs(s1); g0[0] != a || g1[0] != b {
		t.Errorf("got guilds %v on shard 0 and %v on shard 1, want %s and %s", g0, g1, a, b)
	}

	inA := dc.UserMessage(dc.ChannelID("a-general"), dc.UserID(), "to A")
	inB := dc.UserMessage(dc.ChannelID("b-general"), dc.UserID(), "to B")
	dc.WaitFor(t, func() bool { return len(in0.find(inA.ID)) == 1 && len(in1.find(inB.ID)) == 1 }, "each guild's message on its shard")
	// Events arrive in order, so a stray one would already be there.
	if len(in0.find(inB.ID)) != 0 || len(in1.find(inA.ID)) != 0 {
		t.Error("a shard got a message of the other shard's guild")
	}

	if _, err := s0.ApplicationCommandBulkOverwrite(dc.AppID(), "", []*discordgo.ApplicationCommand{askCommand}); err != nil {
		t.Fatal(err)
	}
	ix := dc.SlashCommand(t, discordtest.SlashCommand{Name: "ask", ChannelID: dc.ChannelID("b-general"),
		Options: []discordtest.CommandOption{discordtest.StringOption("question", "q")}})
	if i := next(t, got1); i.ID != ix.ID {
		t.Errorf("shard 1 got interaction %s, want %s", i.ID, ix.ID)
	}
	later := dc.UserMessage(dc.ChannelID("a-general"), dc.UserID(), "after the command")
	dc.WaitFor(t, func() bool { return len(in0.find(later.ID)) == 1 }, "a later message on shard 0")
	select {
	case i := <-got0:
		t.Errorf("shard 0 got interaction %s of guild B", i.ID)
	default:
	}

	log := dc.IdentifyLog()
	if len(log) != 2 || log[0].Shard != [2]int{0, 2} || log[1].Shard != [2]int{1, 2} || log[1].At.Before(log[0].At) {
		t.Fatalf("got identify log %+v, want shard 0 then shard 1 of 2", log)
	}
	// With max_concurrency 2 the shards are in different IDENTIFY buckets,
	// so identifying back to back is allowed.
	if early := tooEarly(log, 2); len(early) != 0 {
		t.Errorf("identifies %+v came less than 5 s after another in their bucket", early)
	}
	if early := tooEarly(log, 1); len(early) != 1 {
		t.Errorf("with max_concurrency 1 got %d early identifies, want the second shard's", len(early))
	}
}

// tooEarly returns the accepted IDENTIFYs that came less than 5 s after
// the previous one in their bucket (shard_id % maxConcurrency).
func tooEarly(log []discordtest.Identify, maxConcurrency int) []discordtest.Identify {
	last := map[int]time.Time{}
	var out []discordtest.Identify
	for _, id := range log {
		if id.CloseCode != 0 {
			continue
		}
		bucket := id.Shard[0] % maxConcurrency
		if prev, ok := last[bucket]; ok && id.At.Sub(prev) < 5*time.Second {
			out = append(out, id)
		}
		last[bucket] = id.At
	}
	return out
}

func TestInvalidShardClosesWith4010(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	for _, shard := range [][]int{{2, 2}, {0, 0}, {-1, 2}} {
		ws := rawGateway(t, dc, 2, identifyPayload("Bot "+dc.Token(), allIntents, shard))
		if code, text := closeCode(t, ws); code != 4010 || text != "Invalid shard." {
			t.Errorf("shard %v: got close %d %q, want 4010", shard, code, text)
		}
	}
	if st := dc.GatewayStats(); st.IdentifyAttempts != 3 || st.Identifies != 0 {
		t.Errorf("got stats %+v, want three refused IDENTIFYs", st)
	}
}

func TestShardingRequiredClosesWith4011(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t, discordtest.WithShardingRequired(2))
	_, err := openShard(t, dc, 0, 1) // discordgo sends no shard for one
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4011 || ce.Text != "Sharding required." {
		t.Fatalf("unsharded: got %v, want close 4011", err)
	}
	s, err := openShard(t, dc, 1, 2)
	if err != nil {
		t.Fatalf("sharded: %v", err)
	}
	if gw, err := s.GatewayBot(); err != nil || gw.Shards != 2 {
		t.Errorf("got /gateway/bot %+v, %v; want 2 shards recommended", gw, err)
	}
	if log := dc.IdentifyLog(); len(log) != 2 || log[0].CloseCode != 4011 || log[0].Shard != [2]int{0, 1} || log[1].CloseCode != 0 {
		t.Errorf("got identify log %+v", log)
	}
}
