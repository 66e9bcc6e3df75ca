package discordtest_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
)

func TestReplyRecordsReferenceAndAllowedMentions(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	in := watchMessages(s)
	general := dc.ChannelID("general")
	q := dc.UserMessage(general, dc.UserID(), "a question")

	sent, err := s.ChannelMessageSendComplex(general, &discordgo.MessageSend{
		Content:         "an answer",
		Reference:       &discordgo.MessageReference{MessageID: q.ID, ChannelID: general},
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}, RepliedUser: true},
	})
	if err != nil {
		t.Fatalf("reply: %v", err)
	}
	m, ok := dc.Message(general, sent.ID)
	if !ok || m.Reference == nil || m.Reference.MessageID != q.ID || m.AllowedMentions == nil ||
		!m.AllowedMentions.RepliedUser || len(m.AllowedMentions.Parse) != 0 || !m.AuthorBot {
		t.Errorf("got %+v, want a reply to %s pinging only the replied user", m, q.ID)
	}
	dc.WaitFor(t, func() bool { return len(in.find(sent.ID)) == 1 }, "the reply's echo")
	echo := in.find(sent.ID)[0]
	if echo.ReferencedMessage == nil || echo.ReferencedMessage.ID != q.ID || echo.Type != discordgo.MessageTypeReply {
		t.Errorf("got echo %+v, want a reply referencing %s", echo, q.ID)
	}

	no := false
	_, err = s.ChannelMessageSendComplex(general, &discordgo.MessageSend{Content: "x", Reference: &discordgo.MessageReference{MessageID: "1"}})
	if restCode(err) != 50035 {
		t.Errorf("reply to an unknown message: got %v, want 50035", err)
	}
	soft, err := s.ChannelMessageSendComplex(general, &discordgo.MessageSend{Content: "x", Reference: &discordgo.MessageReference{MessageID: "1", FailIfNotExists: &no}})
	if err != nil || soft.MessageReference != nil {
		t.Errorf("soft reply to an unknown message: got %+v, %v; want a plain message", soft, err)
	}
}

func TestEnforceNonceReturnsTheEarlierMessage(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	in := watchMessages(s)
	general := dc.ChannelID("general")
	endpoint := discordgo.EndpointChannelMessages(general)
	send := func(content string) *discordgo.Message {
		t.Helper()
		body := map[string]any{"content": content, "nonce": "turn-42", "enforce_nonce": true}
		raw, err := s.RequestWithBucketID("POST", endpoint, body, endpoint)
		if err != nil {
			t.Fatalf("send: %v", err)
		}
		var m discordgo.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		return &m
	}

	first := send("once")
	second := send("twice")
	if second.ID != first.ID || second.Content != "once" {
		t.Errorf("got %s %q, want the earlier message %s", second.ID, second.Content, first.ID)
	}
	msgs := dc.Messages(general)
	if len(msgs) != 1 || msgs[0].Nonce != "turn-42" || !msgs[0].EnforceNonce {
		t.Errorf("got messages %+v, want one with the nonce", msgs)
	}
	other := dc.UserMessage(general, dc.UserID(), "after")
	dc.WaitFor(t, func() bool { return len(in.find(other.ID)) == 1 }, "a later message")
	// Events are handled in order, so a second echo would have come first.
	if got := len(in.find(first.ID)); got != 1 {
		t.Errorf("the nonce message was echoed %d times, want once", got)
	}
}

func TestMessageValidation(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	general := dc.ChannelID("general")

	if _, err := s.ChannelMessageSend(general, strings.Repeat("é", 2000)); err != nil {
		t.Errorf("2000 two-byte runes: got %v, want accepted", err)
	}
	_, err := s.ChannelMessageSend(general, strings.Repeat("a", 2001))
	if restCode(err) != 50035 || !strings.Contains(err.Error(), "content") {
		t.Errorf("2001 characters: got %v, want 50035 on content", err)
	}
	if _, err := s.ChannelMessageSend(general, ""); restCode(err) != 50006 {
		t.Errorf("empty: got %v, want 50006", err)
	}
	if _, err := s.ChannelMessageSend("1", "hi"); restCode(err) != 10003 || restStatus(err) != 404 {
		t.Errorf("unknown channel: got %v, want 404 10003", err)
	}
	embed := &discordgo.MessageEmbed{Description: strings.Repeat("d", 4097)}
	if _, err := s.ChannelMessageSendEmbed(general, embed); restCode(err) != 50035 {
		t.Errorf("long embed: got %v, want 50035", err)
	}
	dc.SetChannelPermissionsDenied(dc.ChannelID("random"))
	if _, err := s.ChannelMessageSend(dc.ChannelID("random"), "hi"); restCode(err) != 50013 || restStatus(err) != 403 {
		t.Errorf("denied channel: got %v, want 403 50013", err)
	}
	if got := len(dc.Messages(general)); got != 1 {
		t.Errorf("got %d stored messages, want only the valid one", got)
	}
}

func TestEditDeleteAndUpload(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	general := dc.ChannelID("general")

	sent, err := s.ChannelMessageSendComplex(general, &discordgo.MessageSend{
		Content: "working…",
		Files:   []*discordgo.File{{Name: "log.txt", ContentType: "text/plain", Reader: bytes.NewReader([]byte("hello"))}},
	})
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if len(sent.Attachments) != 1 || sent.Attachments[0].Filename != "log.txt" {
		t.Errorf("got attachments %+v, want log.txt", sent.Attachments)
	}
	for _, c := range []string{"step 1", "done"} {
		if _, err := s.ChannelMessageEditComplex(discordgo.NewMessageEdit(general, sent.ID).SetContent(c)); err != nil {
			t.Fatalf("edit: %v", err)
		}
	}
	m, _ := dc.Message(general, sent.ID)
	if m.Content != "done" || m.Edits != 2 || m.History[0] != "working…" || string(m.Attachments[0].Data) != "hello" {
		t.Errorf("got %+v, want two edits ending in done", m)
	}

	user := dc.UserMessage(general, dc.UserID(), "mine")
	if _, err := s.ChannelMessageEdit(general, user.ID, "hijacked"); restCode(err) != 50005 {
		t.Errorf("editing a user's message: got %v, want 50005", err)
	}
	if err := s.ChannelMessageDelete(general, sent.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if m, _ := dc.Message(general, sent.ID); !m.Deleted {
		t.Error("message not deleted")
	}
	if _, err := s.ChannelMessage(general, sent.ID); restCode(err) != 10008 {
		t.Errorf("get a deleted message: got %v, want 10008", err)
	}
	if msgs := dc.Messages(general); len(msgs) != 1 || msgs[0].ID != user.ID {
		t.Errorf("got %+v, want only the user's message", msgs)
	}
}

func TestRedeliverAndOtherBots(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	in := watchMessages(s)
	general := dc.ChannelID("general")

	msg := dc.UserMessage(general, dc.UserID(), "do it")
	dc.Redeliver(msg)
	other := dc.UserMessage(general, dc.AddBot("otherbot"), "beep")
	dc.WaitFor(t, func() bool { return len(in.find(msg.ID)) == 2 && len(in.find(other.ID)) == 1 }, "the redelivery and the other bot")
	if got := in.find(other.ID)[0].Author; !got.Bot || got.Username != "otherbot" {
		t.Errorf("got author %+v, want the other bot", got)
	}
}
