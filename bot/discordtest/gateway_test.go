package discordtest_test

import (
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/bot/discordtest"
)

func TestOpenReceivesReadyAndGuilds(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t, discordtest.WithGuild("G", "general", "random"), discordtest.WithGuild("H", "lobby"))
	s := connect(t, dc, allIntents)

	if got, want := s.State.User.ID, dc.BotUserID(); got != want {
		t.Errorf("got bot user %s, want %s", got, want)
	}
	if got := dc.Intents(); got != allIntents {
		t.Errorf("got intents %d, want %d", got, allIntents)
	}
	dc.WaitFor(t, func() bool {
		return len(stateChannels(s, dc.GuildIDs()[1])) == 1
	}, "the second guild in discordgo's state")
	chs := stateChannels(s, dc.GuildID())
	if len(chs) != 2 || chs[0].ID != dc.ChannelID("general") || chs[1].Name != "random" {
		t.Errorf("got channels %+v, want general and random", chs)
	}
	dc.WaitFor(t, func() bool { return dc.GatewayStats().Heartbeats >= 1 }, "the first heartbeat")
	if st := dc.GatewayStats(); st.Identifies != 1 || st.Connections != 1 || st.Open != 1 {
		t.Errorf("got stats %+v, want one connection and one identify", st)
	}
}

func TestResumeReplaysMissedDispatches(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	in := watchMessages(s)
	general := dc.ChannelID("general")

	before := dc.UserMessage(general, dc.UserID(), "before")
	dc.WaitFor(t, func() bool { return len(in.find(before.ID)) == 1 }, "the first message")

	dc.DropGateway()
	missed := dc.UserMessage(general, dc.UserID(), "while you were away")
	if dc.Connected() {
		t.Fatal("still connected after DropGateway")
	}
	dc.WaitFor(t, func() bool { return len(in.find(missed.ID)) == 1 }, "the missed message after the resume")

	if got := in.find(missed.ID)[0].Content; got != "while you were away" {
		t.Errorf("got content %q, want the missed message's", got)
	}
	if got := len(in.find(before.ID)); got != 1 {
		t.Errorf("the message before the drop arrived %d times, want once", got)
	}
	st := dc.GatewayStats()
	if st.Resumes != 1 || st.Identifies != 1 || st.Connections != 2 {
		t.Errorf("got stats %+v, want a resume on a second connection and no second identify", st)
	}
}

func TestInvalidSessionMakesDiscordgoIdentifyAgain(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	in := watchMessages(s)

	dc.InvalidateSession()
	dc.WaitFor(t, func() bool { return dc.GatewayStats().Identifies == 2 && dc.Connected() }, "a new IDENTIFY")
	msg := dc.UserMessage(dc.ChannelID("general"), dc.UserID(), "hello again")
	dc.WaitFor(t, func() bool { return len(in.find(msg.ID)) == 1 }, "a message on the new session")
	if st := dc.GatewayStats(); st.Connections != 1 {
		t.Errorf("got %d connections, want discordgo v0.29.0 to identify on the same one", st.Connections)
	}
}

func TestResumeOfUnknownSessionFails(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	in := watchMessages(s)

	dc.DropGateway()
	dc.InvalidateSession() // forgets the session before the bot resumes it
	dc.WaitFor(t, func() bool { return dc.GatewayStats().Identifies == 2 && dc.Connected() }, "an IDENTIFY after the failed RESUME")
	if st := dc.GatewayStats(); st.FailedResumes != 1 || st.Resumes != 0 {
		t.Errorf("got stats %+v, want one failed resume", st)
	}
	msg := dc.UserMessage(dc.ChannelID("general"), dc.UserID(), "fresh start")
	dc.WaitFor(t, func() bool { return len(in.find(msg.ID)) == 1 }, "a message on the new session")
}

func TestServerHeartbeatRequestIsAnswered(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	connect(t, dc, allIntents)
	dc.WaitFor(t, func() bool { return dc.GatewayStats().Heartbeats == 1 }, "the first heartbeat")

	dc.RequestHeartbeat()
	dc.WaitFor(t, func() bool { return dc.GatewayStats().Heartbeats == 2 }, "a heartbeat in answer to op 1")
}

func TestWithoutMessageContentIntentContentIsEmpty(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, discordgo.IntentsGuilds|discordgo.IntentsGuildMessages)
	in := watchMessages(s)
	general := dc.ChannelID("general")

	plain := dc.UserMessage(general, dc.UserID(), "secret")
	mention := dc.UserMessage(general, dc.UserID(), "<@"+dc.BotUserID()+"> hi")
	own, err := s.ChannelMessageSend(general, "mine")
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	dc.WaitFor(t, func() bool {
		return len(in.find(plain.ID)) == 1 && len(in.find(mention.ID)) == 1 && len(in.find(own.ID)) == 1
	}, "three messages")

	if got := in.find(plain.ID)[0].Content; got != "" {
		t.Errorf("got content %q, want it stripped without MESSAGE_CONTENT", got)
	}
	if got := in.find(mention.ID)[0].Content; got != mention.Content {
		t.Errorf("got content %q for a mention, want %q", got, mention.Content)
	}
	if got := in.find(own.ID)[0]; got.Content != "mine" || !got.Author.Bot || got.Author.ID != dc.BotUserID() {
		t.Errorf("got own echo %q by %+v, want the bot's own content", got.Content, got.Author)
	}
	if got := dc.Messages(general)[0].Content; got != "secret" {
		t.Errorf("the server stored %q, want the content", got)
	}
}

func TestWithoutGuildMessagesIntentNoMessages(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, discordgo.IntentsGuilds)
	in := watchMessages(s)
	var threads inbox
	s.AddHandler(func(_ *discordgo.Session, c *discordgo.ThreadCreate) {
		threads.mu.Lock()
		defer threads.mu.Unlock()
		threads.msgs = append(threads.msgs, &discordgo.Message{ID: c.ID})
	})

	msg := dc.UserMessage(dc.ChannelID("general"), dc.UserID(), "unseen")
	th := dc.AddThread(dc.ChannelID("general"), "later", discordgo.ChannelTypeGuildPublicThread)
	dc.WaitFor(t, func() bool { return len(threads.find(th.ID)) == 1 }, "THREAD_CREATE, which GUILDS covers")
	if got := in.find(msg.ID); len(got) != 0 {
		t.Errorf("got MESSAGE_CREATE without GUILD_MESSAGES: %+v", got[0])
	}
}

func TestPrivilegedIntentNotEnabledClosesWith4014(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t, discordtest.WithoutPrivilegedIntents())
	s, err := bot.NewSession(dc.Token(), dc.URL(), allIntents)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Open(); err == nil {
		t.Fatal("Open succeeded, want the 4014 close to fail it")
	}
	if st := dc.GatewayStats(); st.Identifies != 0 {
		t.Errorf("got %d identifies, want none", st.Identifies)
	}
}

func TestWrongTokenIsRefused(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s, err := bot.NewSession("wrong", dc.URL(), allIntents)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Open()
	if restStatus(err) != 401 {
		t.Fatalf("got %v, want 401 from GET /gateway", err)
	}
	if got := dc.Calls(discordtest.RouteGetGateway); got != 1 {
		t.Errorf("got %d gateway calls, want 1", got)
	}
}

// stateChannels copies a guild's channels from discordgo's state, under its
// lock since discordgo updates it from its own goroutine.
func stateChannels(s *discordgo.Session, guildID string) []discordgo.Channel {
	s.State.RLock()
	defer s.State.RUnlock()
	var out []discordgo.Channel
	for _, g := range s.State.Guilds {
		if g.ID != guildID {
			continue
		}
		for _, c := range g.Channels {
			out = append(out, *c)
		}
	}
	return out
}

func TestReconnectRequestResumes(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	in := watchMessages(s)

	dc.RequestReconnect()
	dc.WaitFor(t, func() bool { return !dc.Connected() }, "discordgo to close the connection")
	msg := dc.UserMessage(dc.ChannelID("general"), dc.UserID(), "still there?")
	dc.WaitFor(t, func() bool { return len(in.find(msg.ID)) == 1 }, "the message after the resume")
	if st := dc.GatewayStats(); st.Resumes != 1 || st.Identifies != 1 {
		t.Errorf("got stats %+v, want a resume", st)
	}
}
