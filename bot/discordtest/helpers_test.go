package discordtest_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/bot/discordtest"
)

const allIntents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentMessageContent

// connect opens a real discordgo session against dc, handling events in
// arrival order, and closes it when the test ends.
func connect(t *testing.T, dc *discordtest.Server, intents discordgo.Intent) *discordgo.Session {
	t.Helper()
	s, err := bot.NewSession(dc.Token(), dc.URL(), intents)
	if err != nil {
		t.Fatalf("new session: %v", err)
	}
	s.SyncEvents = true // as the bot does: handlers run in arrival order
	if err := s.Open(); err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		// Stop discordgo from reconnecting if its heartbeat fires during
		// the second Close sleeps, and let it sleep in the background so
		// that the test's parallel slot is free at once.
		s.Lock()
		s.ShouldReconnectOnError = false
		s.Unlock()
		go func() { _ = s.Close() }()
	})
	dc.WaitConnected(t)
	// discordgo's first heartbeat follows Open; wait for it, or a quick
	// test's Close could beat it and make it log a failed write.
	dc.WaitFor(t, func() bool { return dc.GatewayStats().Heartbeats > 0 }, "the first heartbeat")
	return s
}

// inbox records the messages a session's handler saw.
type inbox struct {
	mu   sync.Mutex
	msgs []*discordgo.Message
}

func watchMessages(s *discordgo.Session) *inbox {
	in := &inbox{}
	s.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) {
		in.mu.Lock()
		defer in.mu.Unlock()
		in.msgs = append(in.msgs, m.Message)
	})
	return in
}

// find returns the messages with the given id.
func (in *inbox) find(id string) []*discordgo.Message {
	in.mu.Lock()
	defer in.mu.Unlock()
	var out []*discordgo.Message
	for _, m := range in.msgs {
		if m.ID == id {
			out = append(out, m)
		}
	}
	return out
}

// restCode returns the Discord JSON error code of err, or 0.
func restCode(err error) int {
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Message != nil {
		return re.Message.Code
	}
	return 0
}

func restStatus(err error) int {
	var re *discordgo.RESTError
	if errors.As(err, &re) {
		return re.Response.StatusCode
	}
	return 0
}

// registerGuild registers commands in dc's first guild through s.
func registerGuild(t *testing.T, s *discordgo.Session, dc *discordtest.Server, cmds ...*discordgo.ApplicationCommand) []*discordgo.ApplicationCommand {
	t.Helper()
	got, err := s.ApplicationCommandBulkOverwrite(dc.AppID(), dc.GuildID(), cmds)
	if err != nil {
		t.Fatalf("register commands: %v", err)
	}
	return got
}
