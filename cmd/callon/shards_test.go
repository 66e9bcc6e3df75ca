package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/callonbot/callon/bot/discordtest"
)

// teamIn runs /callon in a channel and returns the new thread's id once
// the kickoff message is in it.
func (w *world) teamIn(channel, goal string) string {
	w.t.Helper()
	ch := w.dc.ChannelID(channel)
	before := len(w.dc.Threads(ch))
	ix := w.dc.SlashCommand(w.t, discordtest.SlashCommand{Name: "callon", ChannelID: ch,
		Options: []discordtest.CommandOption{discordtest.StringOption("goal", goal)}})
	w.dc.WaitFor(w.t, func() bool {
		m, ok := ix.Original()
		return ok && strings.Contains(m.Content, "is ready in")
	}, "/callon to answer with the thread")
	threads := w.dc.Threads(ch)
	if len(threads) != before+1 {
		w.t.Fatalf("got %d threads in #%s, want %d", len(threads), channel, before+1)
	}
	thread := threads[len(threads)-1].ID
	w.dc.WaitFor(w.t, func() bool { return len(w.botMessages(thread)) >= 1 }, "the kickoff message")
	return thread
}

// identified reports whether an IDENTIFY as shard [id, count] was
// accepted; n counts them.
func identified(dc *discordtest.Server, id, count int) (n int) {
	for _, l := range dc.IdentifyLog() {
		if l.CloseCode == 0 && l.Shard == [2]int{id, count} {
			n++
		}
	}
	return n
}

// Two shards: guild A's events go to shard 0, guild B's to shard 1, and
// each shard's session handles only its own guild's, live and in the
// catch-up after a restart, whether one process runs both shards or
// each runs its own. The commands are registered by the process that
// runs shard 0, and only by it.
func TestShardsHandleOnlyTheirGuilds(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t, discordtest.WithGuild("A", "a-general"), discordtest.WithGuild("B", "b-general"),
		discordtest.WithShardingRequired(2), discordtest.WithMaxConcurrency(2))
	guildA, guildB := dc.GuildIDs()[0], dc.GuildIDs()[1]
	if discordtest.ShardOf(guildA, 2) != 0 || discordtest.ShardOf(guildB, 2) != 1 {
		t.Fatal("the fake's guilds are not on shards 0 and 1")
	}
	w := newWorld(t, dc, echoTeam())

	// One process, both shards, the count asked of Discord.
	stop := w.process(nil, "DISCORD_SHARD_COUNT", "auto")
	dc.WaitFor(t, func() bool { return identified(dc, 0, 2) == 1 && identified(dc, 1, 2) == 1 }, "shards 0 and 1 of 2")
	dc.WaitFor(t, func() bool { return len(dc.Commands("")) == commandCount }, "the commands registered")
	threadA, threadB := w.teamIn("a-general", "Team A"), w.teamIn("b-general", "Team B")
	live := []sent{{threadA, w.say(threadA, "hi tok-a1")}, {threadB, w.say(threadB, "hi tok-b1")}}
	w.waitAnswered(live)
	w.checkRoutedOn(0, live[0].msg)
	w.checkRoutedOn(1, live[1].msg)
	stop()
	overwrites := dc.Calls(discordtest.RouteOverwriteGlobalCommands)

	// Nobody listens: both messages are missed.
	missed := []sent{{threadA, w.say(threadA, "while away tok-a2")}, {threadB, w.say(threadB, "while away tok-b2")}}

	// A process with shard 0 only catches up guild A's threads, not B's.
	w.process(nil, "DISCORD_SHARD_COUNT", "2", "DISCORD_SHARD_IDS", "0")
	w.waitAnswered(missed[:1])
	dc.WaitFor(t, func() bool { return w.logged("caught up on missed messages", "shard=0", "recorded=1") }, "shard 0's catch-up")
	// recorded=1: guild B's thread was not read.
	if n := len(w.reply(threadB, missed[1].msg)); n != 0 {
		t.Fatalf("guild B's message was answered without its shard (%d replies)", n)
	}
	if got := dc.Calls(discordtest.RouteOverwriteGlobalCommands); got != overwrites+1 {
		t.Errorf("the process with shard 0 registered the commands %d times, want once", got-overwrites)
	}

	// A process with shard 1 only catches up guild B's.
	w.process(nil, "DISCORD_SHARD_COUNT", "2", "DISCORD_SHARD_IDS", "1")
	w.waitAnswered(missed[1:])
	dc.WaitFor(t, func() bool { return w.logged("caught up on missed messages", "shard=1", "recorded=1") }, "shard 1's catch-up")
	dc.WaitFor(t, func() bool { return w.logged(`msg=connected`, `shards=[1]`) }, "the shard 1 process connected")
	if got := dc.Calls(discordtest.RouteOverwriteGlobalCommands); got != overwrites+1 {
		t.Errorf("the process without shard 0 registered the commands too (%d overwrites, want %d)", got, overwrites+1)
	}
	if identified(dc, 0, 2) != 2 || identified(dc, 1, 2) != 2 {
		t.Errorf("identify log %+v: want each shard identified twice", dc.IdentifyLog())
	}

	// Live again: each process routes its own guild's messages.
	again := []sent{{threadA, w.say(threadA, "again tok-a3")}, {threadB, w.say(threadB, "again tok-b3")}}
	w.waitAnswered(again)
	w.checkRoutedOn(0, again[0].msg)
	w.checkRoutedOn(1, again[1].msg)
	for _, s := range append(append(live, missed...), again...) {
		if n := len(w.reply(s.thread, s.msg)); n != 1 {
			t.Errorf("%q got %d replies, want 1", s.msg.Content, n)
		}
	}
}

// checkRoutedOn checks that a message was routed by shard, and only by it.
func (w *world) checkRoutedOn(shard int, msg discordtest.Message) {
	w.t.Helper()
	other := 1 - shard
	w.dc.WaitFor(w.t, func() bool { return w.logged(`msg="message routed"`, "message_id="+msg.ID) }, "the message's routing")
	if !w.logged(`msg="message routed"`, "shard="+strconv.Itoa(shard), "message_id="+msg.ID) || w.logged(`msg="message routed"`, "shard="+strconv.Itoa(other), "message_id="+msg.ID) {
		w.t.Errorf("message %q was not routed by shard %d alone", msg.Content, shard)
	}
}
