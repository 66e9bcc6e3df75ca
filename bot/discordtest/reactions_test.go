package discordtest_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/bot/discordtest"
)

func TestReactions(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents|discordgo.IntentGuildMessageReactions)
	var mu sync.Mutex
	var added, removed []string // emoji by user
	s.AddHandler(func(_ *discordgo.Session, r *discordgo.MessageReactionAdd) {
		mu.Lock()
		defer mu.Unlock()
		added = append(added, r.Emoji.Name+" by "+r.UserID)
	})
	s.AddHandler(func(_ *discordgo.Session, r *discordgo.MessageReactionRemove) {
		mu.Lock()
		defer mu.Unlock()
		removed = append(removed, r.Emoji.Name+" by "+r.UserID)
	})
	general := dc.ChannelID("general")
	q := dc.UserMessage(general, dc.UserID(), "can you look?")

	for _, emoji := range []string{"⏳", "#⃣"} { // discordgo escapes the # itself
		if err := s.MessageReactionAdd(general, q.ID, emoji); err != nil {
			t.Fatalf("react %s: %v", emoji, err)
		}
	}
	if err := s.MessageReactionAdd(general, q.ID, "⏳"); err != nil {
		t.Fatalf("react twice: %v", err)
	}
	dc.React(general, q.ID, dc.UserID(), "⏳")
	m, _ := dc.Message(general, q.ID)
	want := []discordtest.Reaction{{Emoji: "⏳", Count: 2, Me: true}, {Emoji: "#⃣", Count: 1, Me: true}}
	if !slices.Equal(m.Reactions, want) {
		t.Errorf("got reactions %+v, want %+v", m.Reactions, want)
	}
	got, err := s.ChannelMessage(general, q.ID)
	if err != nil || len(got.Reactions) != 2 || got.Reactions[0].Count != 2 || !got.Reactions[0].Me || got.Reactions[0].Emoji.Name != "⏳" {
		t.Errorf("got REST reactions %+v, %v; want ⏳ twice, the bot's included", got.Reactions, err)
	}

	if err := s.MessageReactionRemove(general, q.ID, "⏳", "@me"); err != nil {
		t.Fatalf("unreact: %v", err)
	}
	if err := s.MessageReactionRemove(general, q.ID, "⏳", "@me"); err != nil {
		t.Fatalf("unreact twice: %v", err)
	}
	m, _ = dc.Message(general, q.ID)
	want = []discordtest.Reaction{{Emoji: "⏳", Count: 1, Me: false}, {Emoji: "#⃣", Count: 1, Me: true}}
	if !slices.Equal(m.Reactions, want) {
		t.Errorf("after unreacting got %+v, want %+v", m.Reactions, want)
	}
	dc.WaitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(added) == 3 && len(removed) == 1
	}, "three MESSAGE_REACTION_ADDs and one MESSAGE_REACTION_REMOVE")
	mu.Lock()
	if added[2] != "⏳ by "+dc.UserID() || removed[0] != "⏳ by "+dc.BotUserID() {
		t.Errorf("got added %v and removed %v", added, removed)
	}
	mu.Unlock()

	if got := dc.Calls(discordtest.RouteAddReaction); got != 3 {
		t.Errorf("got %d add-reaction calls, want 3", got)
	}
}

// Apart from TestReactions since discordgo spaces reactions in a channel
// 200 ms apart.
func TestReactionErrors(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s, err := bot.NewSession(dc.Token(), dc.URL(), allIntents) // REST only
	if err != nil {
		t.Fatal(err)
	}
	general := dc.ChannelID("general")
	q := dc.UserMessage(general, dc.UserID(), "hi")

	if err := s.MessageReactionAdd(general, "1", "⏳"); restCode(err) != 10008 || restStatus(err) != 404 {
		t.Errorf("unknown message: got %v, want 404 10008", err)
	}
	if err := s.MessageReactionAdd(general, q.ID, "callon:123"); restCode(err) != 10014 {
		t.Errorf("unknown custom emoji: got %v, want 10014", err)
	}
	if err := s.MessageReactionAdd(general, q.ID, "thumbsup"); restCode(err) != 10014 {
		t.Errorf("an emoji name: got %v, want 10014", err)
	}
	if m, _ := dc.Message(general, q.ID); len(m.Reactions) != 0 {
		t.Errorf("got reactions %+v, want none", m.Reactions)
	}
}
