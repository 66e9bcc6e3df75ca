package discordtest_test

import (
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
)

func TestThreadFromMessage(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	general := dc.ChannelID("general")
	root := dc.UserMessage(general, dc.UserID(), "let's talk")

	th, err := s.MessageThreadStartComplex(general, root.ID, &discordgo.ThreadStart{Name: "talk", AutoArchiveDuration: 60})
	if err != nil {
		t.Fatalf("start thread: %v", err)
	}
	if th.ID != root.ID || th.Type != discordgo.ChannelTypeGuildPublicThread || th.ParentID != general {
		t.Errorf("got thread %+v, want a public thread with the message's id", th)
	}
	dc.WaitFor(t, func() bool {
		c, err := s.State.Channel(th.ID)
		return err == nil && c.ThreadMetadata != nil
	}, "THREAD_CREATE in discordgo's state")
	if _, err := s.MessageThreadStartComplex(general, root.ID, &discordgo.ThreadStart{Name: "again"}); restCode(err) != 160004 {
		t.Errorf("second thread: got %v, want 160004", err)
	}
	if _, err := s.ChannelMessageSend(th.ID, "in the thread"); err != nil {
		t.Fatalf("post in thread: %v", err)
	}
	if m, _ := dc.Message(general, root.ID); m.ThreadID != th.ID {
		t.Errorf("got thread id %q on the root, want %s", m.ThreadID, th.ID)
	}
	if got := dc.Threads(general); len(got) != 1 || got[0].MessageCount != 1 || !got[0].BotJoined {
		t.Errorf("got threads %+v, want one with a message", got)
	}
}

func TestThreadWithoutMessage(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	general := dc.ChannelID("general")

	private, err := s.ThreadStartComplex(general, &discordgo.ThreadStart{Name: "forgot the type"})
	if err != nil {
		t.Fatalf("start thread: %v", err)
	}
	public, err := s.ThreadStartComplex(general, &discordgo.ThreadStart{Name: "public", Type: discordgo.ChannelTypeGuildPublicThread})
	if err != nil {
		t.Fatalf("start thread: %v", err)
	}
	if private.Type != discordgo.ChannelTypeGuildPrivateThread || public.Type != discordgo.ChannelTypeGuildPublicThread {
		t.Errorf("got types %d and %d, want 12 for an omitted type and 11", private.Type, public.Type)
	}
	if err := s.ThreadJoin(public.ID); err != nil {
		t.Errorf("join: %v", err)
	}
	if err := s.ChannelTyping(public.ID); err != nil {
		t.Errorf("typing: %v", err)
	}
	if got := dc.Typing(public.ID); got != 1 {
		t.Errorf("got %d typing calls, want 1", got)
	}
}

func TestArchivedThread(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	general := dc.ChannelID("general")
	th, err := s.ThreadStartComplex(general, &discordgo.ThreadStart{Name: "old", Type: discordgo.ChannelTypeGuildPublicThread})
	if err != nil {
		t.Fatalf("start thread: %v", err)
	}

	dc.ArchiveThread(th.ID)
	_, err = s.ChannelMessageSend(th.ID, "hello?")
	if restCode(err) != 50083 || restStatus(err) != 400 {
		t.Fatalf("post to archived thread: got %v, want 400 50083", err)
	}
	archived := false
	if _, err := s.ChannelEditComplex(th.ID, &discordgo.ChannelEdit{Archived: &archived}); err != nil {
		t.Fatalf("unarchive: %v", err)
	}
	if _, err := s.ChannelMessageSend(th.ID, "hello again"); err != nil {
		t.Fatalf("post after unarchiving: %v", err)
	}
	if c, _ := dc.Channel(th.ID); c.Archived || c.MessageCount != 1 {
		t.Errorf("got %+v, want an active thread with one message", c)
	}
}
