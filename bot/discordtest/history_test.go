package discordtest_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/bot/discordtest"
)

// fillHistory posts n messages in a channel, every third by the bot
// through REST (the first of those with a file), the others by the user.
// It returns the stored messages, oldest first.
func fillHistory(t *testing.T, dc *discordtest.Server, s *discordgo.Session, channelID string, n int) []discordtest.Message {
	t.Helper()
	for i := range n {
		text := fmt.Sprintf("message %d", i)
		switch {
		case i == 2:
			_, err := s.ChannelMessageSendComplex(channelID, &discordgo.MessageSend{
				Content: text,
				Files:   []*discordgo.File{{Name: "log.txt", ContentType: "text/plain", Reader: bytes.NewReader([]byte("log"))}},
			})
			if err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		case i%3 == 2:
			if _, err := s.ChannelMessageSend(channelID, text); err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		default:
			dc.UserMessage(channelID, dc.UserID(), text)
		}
	}
	return dc.Messages(channelID)
}

func ids(msgs []*discordgo.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m.ID)
	}
	return out
}

func TestHistoryPagesForwardWithAfter(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s, err := bot.NewSession(dc.Token(), dc.URL(), allIntents) // REST only
	if err != nil {
		t.Fatal(err)
	}
	general := dc.ChannelID("general")
	stored := fillHistory(t, dc, s, general, 130)

	var walked []string
	after, pages := "0", 0
	for {
		page, err := s.ChannelMessages(general, 100, "", after, "")
		if err != nil {
			t.Fatalf("page after %s: %v", after, err)
		}
		if len(page) == 0 {
			break
		}
		pages++
		if !slices.IsSortedFunc(page, func(a, b *discordgo.Message) int { return strings.Compare(pad(b.ID), pad(a.ID)) }) {
			t.Fatalf("page %d is not newest first: %v", pages, ids(page))
		}
		got := ids(page)
		slices.Reverse(got)
		walked = append(walked, got...)
		after = page[0].ID // the newest of the page
	}
	want := make([]string, 0, len(stored))
	for _, m := range stored {
		want = append(want, m.ID)
	}
	if pages != 2 || !slices.Equal(walked, want) {
		t.Errorf("walked %d messages in %d pages, want all %d in order in 2 pages", len(walked), pages, len(want))
	}

	first, err := s.ChannelMessages(general, 100, "", "0", "")
	if err != nil {
		t.Fatal(err)
	}
	last := first[len(first)-1] // the oldest message of the channel
	if last.Content != "message 0" || last.Author.ID != dc.UserID() {
		t.Errorf("got oldest %q by %s, want the user's message 0", last.Content, last.Author.ID)
	}
	withFile := first[len(first)-3]
	if withFile.Author.ID != dc.BotUserID() || len(withFile.Attachments) != 1 || withFile.Attachments[0].Filename != "log.txt" {
		t.Errorf("got %+v, want the bot's message 2 with its attachment", withFile)
	}
}

// pad makes decimal ids of different lengths compare as numbers.
func pad(id string) string { return strings.Repeat("0", 20-len(id)) + id }

func TestHistoryWindows(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s, err := bot.NewSession(dc.Token(), dc.URL(), allIntents)
	if err != nil {
		t.Fatal(err)
	}
	general := dc.ChannelID("general")
	stored := fillHistory(t, dc, s, general, 60)
	id := func(i int) string { return stored[i].ID }
	newestFirst := func(from, to int) []string { // stored[from:to], newest first
		var out []string
		for i := to - 1; i >= from; i-- {
			out = append(out, id(i))
		}
		return out
	}

	for _, tc := range []struct {
		name                  string
		limit                 int
		before, after, around string
		want                  []string
	}{
		{"default limit", 0, "", "", "", newestFirst(10, 60)},
		{"latest", 5, "", "", "", newestFirst(55, 60)},
		{"before", 3, id(20), "", "", newestFirst(17, 20)},
		{"before the first", 3, id(0), "", "", nil},
		{"after", 3, "", id(20), "", newestFirst(21, 24)},
		{"after the last", 3, "", id(59), "", nil},
		{"around", 5, "", "", id(30), newestFirst(28, 33)},
		{"around, one", 1, "", "", id(30), newestFirst(30, 31)},
	} {
		got, err := s.ChannelMessages(general, tc.limit, tc.before, tc.after, tc.around)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !slices.Equal(ids(got), tc.want) {
			t.Errorf("%s: got %d messages %v, want %v", tc.name, len(got), ids(got), tc.want)
		}
	}

	if err := s.ChannelMessageDelete(general, id(2)); err != nil { // the bot's own
		t.Fatal(err)
	}
	got, err := s.ChannelMessages(general, 3, id(4), "", "")
	if err != nil || !slices.Equal(ids(got), []string{id(3), id(1), id(0)}) {
		t.Errorf("before a deleted message: got %v, %v; want it skipped", ids(got), err)
	}

	for name, call := range map[string]func() error{
		"two windows": func() error { _, err := s.ChannelMessages(general, 10, id(5), id(1), ""); return err },
		"limit 101":   func() error { _, err := s.ChannelMessages(general, 101, "", "", ""); return err },
		"bad id":      func() error { _, err := s.ChannelMessages(general, 10, "yesterday", "", ""); return err },
	} {
		if err := call(); restCode(err) != 50035 || restStatus(err) != 400 {
			t.Errorf("%s: got %v, want 400 with code 50035", name, err)
		}
	}
	if _, err := s.ChannelMessages("1", 10, "", "", ""); restCode(err) != 10003 {
		t.Errorf("unknown channel: got %v, want 10003", err)
	}
}
