package discordtest_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
)

// get downloads a URL and returns its status and body.
func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("get %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, body
}

var pngHeader = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

func TestUserAttachmentsAreServedByTheCDN(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	in := watchMessages(s)
	general := dc.ChannelID("general")

	posted := dc.UserMessageWith(general, dc.UserID(), "",
		discordtest.UserAttachment{Filename: "notes.txt", ContentType: "text/plain; charset=utf-8", Data: []byte("remember the milk")},
		discordtest.UserAttachment{Filename: "shot.png", Data: pngHeader},
	)
	dc.WaitFor(t, func() bool { return len(in.find(posted.ID)) == 1 }, "the message with attachments")
	m := in.find(posted.ID)[0]
	if m.Content != "" || len(m.Attachments) != 2 {
		t.Fatalf("got content %q and %d attachments, want none and two", m.Content, len(m.Attachments))
	}
	notes, shot := m.Attachments[0], m.Attachments[1]
	if notes.ID != posted.Attachments[0].ID || notes.Filename != "notes.txt" || notes.Size != len("remember the milk") || notes.ContentType != "text/plain; charset=utf-8" {
		t.Errorf("got %+v, want notes.txt as posted", notes)
	}
	if shot.ContentType != "image/png" {
		t.Errorf("got content type %q for shot.png, want it from the extension", shot.ContentType)
	}
	wantPrefix := dc.CDNURL() + "/attachments/" + general + "/" + notes.ID + "/notes.txt?"
	if !strings.HasPrefix(notes.URL, wantPrefix) || !strings.Contains(notes.URL, "ex=") || !strings.Contains(notes.URL, "&hm=") {
		t.Errorf("got url %s, want a signed one under %s", notes.URL, wantPrefix)
	}
	if !strings.HasPrefix(notes.ProxyURL, dc.MediaURL()+"/attachments/") {
		t.Errorf("got proxy url %s, want one under %s", notes.ProxyURL, dc.MediaURL())
	}

	if got := dc.AttachmentDownloads(notes.ID); got != 0 {
		t.Fatalf("got %d downloads before any, want 0", got)
	}
	status, body := get(t, notes.URL)
	if status != 200 || string(body) != "remember the milk" {
		t.Errorf("got %d %q, want the file", status, body)
	}
	if status, body := get(t, shot.ProxyURL); status != 200 || !bytes.Equal(body, pngHeader) {
		t.Errorf("through the media proxy: got %d %q, want the image", status, body)
	}
	for name, u := range map[string]string{
		"tampered signature": strings.Replace(notes.URL, "&hm=", "&hm=0", 1),
		"no signature":       strings.Split(notes.URL, "?")[0],
		"other file name":    strings.Replace(notes.URL, "notes.txt", "other.txt", 1),
	} {
		if status, _ := get(t, u); status != 404 {
			t.Errorf("%s: got %d, want 404", name, status)
		}
	}
	if got := dc.AttachmentDownloads(notes.ID); got != 1 {
		t.Errorf("got %d downloads of notes.txt, want 1", got)
	}
	if got := dc.AttachmentDownloads(shot.ID); got != 1 {
		t.Errorf("got %d downloads of shot.png, want 1", got)
	}
}

func TestBotUploadsAreServedAndListed(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, discordgo.IntentsGuilds|discordgo.IntentsGuildMessages) // no MESSAGE_CONTENT
	in := watchMessages(s)
	general := dc.ChannelID("general")

	sent, err := s.ChannelMessageSendComplex(general, &discordgo.MessageSend{
		Files: []*discordgo.File{{Name: "report.md", ContentType: "text/markdown", Reader: strings.NewReader("# done")}},
	})
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	if status, body := get(t, sent.Attachments[0].URL); status != 200 || string(body) != "# done" {
		t.Errorf("got %d %q, want the upload", status, body)
	}
	user := dc.UserMessageWith(general, dc.UserID(), "see attached", discordtest.UserAttachment{Filename: "a.txt", Data: []byte("a")})
	dc.WaitFor(t, func() bool { return len(in.find(user.ID)) == 1 }, "the user's message")
	if got := in.find(user.ID)[0]; got.Content != "" || len(got.Attachments) != 0 {
		t.Errorf("without MESSAGE_CONTENT got %q with %d attachments, want both stripped", got.Content, len(got.Attachments))
	}
	listed, err := s.ChannelMessages(general, 10, "", "", "")
	if err != nil || len(listed) != 2 || len(listed[0].Attachments) != 1 || listed[0].Attachments[0].ID != user.Attachments[0].ID {
		t.Errorf("got history %v, %v; want both messages with their attachments", listed, err)
	}

	if err := s.ChannelMessageDelete(general, sent.ID); err != nil {
		t.Fatal(err)
	}
	if status, _ := get(t, sent.Attachments[0].URL); status != 404 {
		t.Errorf("a deleted message's attachment: got %d, want 404", status)
	}
	if got := dc.AttachmentDownloads(sent.Attachments[0].ID); got != 1 {
		t.Errorf("got %d downloads, want 1", got)
	}
}
