package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/callonbot/callon/internal/golden"
)

func TestUnderBase(t *testing.T) {
	t.Parallel()
	bases := []string{"https://cdn.discordapp.com", "http://127.0.0.1:4000/cdn/"}
	tests := []struct {
		url  string
		want bool
	}{
		{"https://cdn.discordapp.com/attachments/1/2/a.txt?ex=1&is=2&hm=3&", true},
		{"https://CDN.discordapp.com/attachments/1/2/a.txt", true},
		{"http://127.0.0.1:4000/cdn/attachments/1/2/a.txt", true},
		{"http://cdn.discordapp.com/attachments/1/2/a.txt", false},              // another scheme
		{"https://cdn.discordapp.com.example.com/attachments/1/2/a.txt", false}, // a look-alike host
		{"https://user@cdn.discordapp.com/attachments/1/2/a.txt", false},        // userinfo
		{"http://127.0.0.1:4000/cdnx/attachments/a.txt", false},                 // beside the base's path
		{"http://127.0.0.1:4000/cdn/../media/a.txt", false},                     // out of it
		{"http://127.0.0.1:4001/cdn/attachments/a.txt", false},                  // another port
		{"http://127.0.0.1:4000/cdn", false},                                    // the base itself is no file
		{"ftp://cdn.discordapp.com/a.txt", false},
		{"not a url", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := UnderBase(tt.url, bases); got != tt.want {
			t.Errorf("UnderBase(%q) = %v, want %v", tt.url, got, tt.want)
		}
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, ct string
		want     AttachmentKind
	}{
		{"notes.md", "text/markdown; charset=utf-8", KindText},
		{"data.csv", "text/csv", KindText},
		{"x.json", "application/json", KindText},
		{"main.go", "application/octet-stream", KindText},
		{"main.go", "", KindText},
		{"Makefile", "", KindText},
		{"api.yaml", "application/x-yaml", KindText},
		{"event.json", "application/cloudevents+json", KindText},
		{"logo.svg", "image/svg+xml", KindText},
		{"photo.png", "image/png", KindImage},
		{"photo.jpg", "image/jpeg", KindImage},
		{"shot.webp", "", KindImage},
		{"scan.tiff", "image/tiff", KindOther},
		{"clip.mp4", "video/mp4", KindOther},
		{"report.pdf", "application/pdf", KindOther},
		{"archive.zip", "application/zip", KindOther},
		{"blob", "", KindOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.name, tt.ct); got != tt.want {
				t.Errorf("Classify(%q, %q) = %s, want %s", tt.name, tt.ct, got, tt.want)
			}
		})
	}
}

func TestPlanAttachments(t *testing.T) {
	t.Parallel()
	cdn := "https://cdn.example/attachments/"
	p := AttachmentPolicy{CDN: []string{"https://cdn.example"}, MaxFile: 1000, MaxMessage: 1500}
	got := p.Plan([]IncomingAttachment{
		{ID: "1", Filename: "a.txt", ContentType: "text/plain", Size: 600, URL: cdn + "a.txt"},
		{ID: "2", Filename: "a.txt", ContentType: "text/plain", Size: 10, URL: "https://elsewhere.example/a.txt", ProxyURL: cdn + "proxy"},
		{ID: "3", Filename: "big.log", ContentType: "text/plain", Size: 1001, URL: cdn + "big.log"},
		{ID: "4", Filename: "b.md", ContentType: "text/markdown", Size: 800, URL: cdn + "b.md"},
		{ID: "5", Filename: "c.md", ContentType: "text/markdown", Size: 900, URL: cdn + "c.md"},
		{ID: "6", Filename: "deck.pdf", ContentType: "application/pdf", Size: 10, URL: cdn + "deck.pdf"},
		{ID: "7", Filename: "x.txt", ContentType: "text/plain", Size: 10, URL: "https://evil.example/x.txt"},
	})
	var lines []string
	for _, a := range got {
		lines = append(lines, fmt.Sprintf("%d %s %s %s url=%v %s", a.Position, a.Name, a.Kind, a.State, a.URL != "", a.Note))
	}
	want := []string{
		"0 a.txt text pending url=true ",
		"1 a (2).txt text pending url=true ", // its proxy URL is on the CDN
		"2 big.log text skipped url=true larger than the 1000 bytes limit per file",
		"3 b.md text pending url=true ",
		"4 c.md text skipped url=true the message's files together are over the 1 KB limit",
		"5 deck.pdf other skipped url=true callon reads only text files and images",
		"6 x.txt text skipped url=false its address is not on Discord's CDN, so it was not fetched",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if d := (AttachmentPolicy{}).Plan([]IncomingAttachment{{Filename: "a.txt", URL: DefaultMediaURL + "/attachments/1/2/a.txt"}}); d[0].State != AttachmentPending {
		t.Errorf("the default policy refused Discord's media proxy: %+v", d[0])
	}
}

func TestFormatSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KB", 340 * 1024: "340 KB",
		3<<20 + 200<<10: "3.2 MB", 8 << 20: "8 MB", 16 << 20: "16 MB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestRenderAttachmentsBoundsText(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", MaxAttachmentChars+5)
	var atts []Attachment
	for i := range 5 {
		atts = append(atts, Attachment{ID: int64(i), Name: fmt.Sprintf("f%d.txt", i), Kind: KindText, State: AttachmentStored,
			Size: int64(len(long)), Data: []byte(long)})
	}
	text, images := RenderAttachments(atts, true)
	if images != nil {
		t.Errorf("got %d images from text files", len(images))
	}
	if n := utf8.RuneCountInString(text); n > MaxAttachmentsChars+2000 {
		t.Errorf("the files' text is %d characters, want about %d at most", n, MaxAttachmentsChars)
	}
	if !strings.Contains(text, fmt.Sprintf("(shortened: the first %d of %d characters)", MaxAttachmentChars, MaxAttachmentChars+5)) {
		t.Errorf("a shortened file does not say so:\n%.300s", text)
	}
	if !strings.Contains(text, "f4.txt (") || !strings.Contains(text, "not shown: the other files took all the room for text") {
		t.Errorf("the file past the budget is not named with why")
	}
}

func TestMasterPromptWithFilesGolden(t *testing.T) {
	t.Parallel()
	atts := []Attachment{
		{ID: 1, Name: "notes.md", ContentType: "text/markdown; charset=utf-8", Size: 24, Kind: KindText, State: AttachmentStored,
			Data: []byte("\uFEFF# Beta\n- launch in May\n")},
		{ID: 2, Name: "photo.png", ContentType: "image/png", Size: 2048, Kind: KindImage, State: AttachmentStored, Data: []byte("\x89PNG")},
		{ID: 3, Name: "deck.pdf", ContentType: "application/pdf", Size: 3<<20 + 200<<10, Kind: KindOther, State: AttachmentSkipped,
			Note: "callon reads only text files and images"},
		{ID: 4, Name: "big.csv", ContentType: "text/csv", Size: 12 << 20, Kind: KindText, State: AttachmentSkipped,
			Note: "larger than the 8 MB limit per file"},
		{ID: 5, Name: "gone.txt", ContentType: "text/plain", Size: 10, Kind: KindText, State: AttachmentFailed, Note: "Discord no longer serves it"},
	}
	tc := turnContext{
		session:     Session{Goal: "Launch the beta"},
		roster:      DefaultRoles()[:2],
		turn:        Turn{AuthorID: "42", Content: "planner: make a timeline from these", AddressedTo: "planner", Round: 1},
		tasks:       []Task{{ID: 10, Round: 1, Role: "planner", Instruction: "Timeline", State: TaskDone, Result: "May 1", Attachments: []int64{1}}},
		maxRounds:   2,
		attachments: atts,
	}
	msgs := masterMessages(tc)
	golden.Check(t, "master_prompt_files.golden", renderMessages(msgs))
	for _, m := range msgs {
		if len(m.Images) > 0 {
			t.Errorf("a model without vision was given %d images", len(m.Images))
		}
	}
	tc.vision = true
	var images []Image
	for _, m := range masterMessages(tc) {
		images = append(images, m.Images...)
	}
	if len(images) != 1 || images[0].Name != "photo.png" || images[0].ContentType != "image/png" {
		t.Errorf("images = %+v, want photo.png for a model with vision", images)
	}
	tc.turn.Content = ""
	if m := masterMessages(tc); !strings.Contains(m[1].Content, "<@42>: (no text: only files)") {
		t.Errorf("a message of files only reads %q", m[1].Content)
	}
}

// fetchFake is an AttachmentStore and a Downloader at once.
type fetchFake struct {
	mu       sync.Mutex
	queue    []Attachment
	saved    map[int64]AttachmentResult
	download func(url string) ([]byte, string, error)
	urls     []string
}

func (f *fetchFake) ClaimAttachments(_ context.Context, _ Scope, _ string, n int, _ time.Duration) ([]Attachment, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n = min(n, len(f.queue))
	out := f.queue[:n]
	f.queue = f.queue[n:]
	return out, nil
}

func (f *fetchFake) SaveAttachment(_ context.Context, _ string, id int64, r AttachmentResult) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.saved[id] = r
	return nil
}

func (f *fetchFake) Download(_ context.Context, url string, _ int64) ([]byte, string, error) {
	f.mu.Lock()
	f.urls = append(f.urls, url)
	f.mu.Unlock()
	return f.download(url)
}

func TestFetcherOutcomes(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	tests := []struct {
		name     string
		att      Attachment
		data     []byte
		err      error
		want     AttachmentState
		wantNote string
		retry    bool
	}{
		{name: "text stored", att: Attachment{Kind: KindText, ContentType: "text/plain"}, data: []byte("hello"), want: AttachmentStored},
		{name: "text that is binary", att: Attachment{Kind: KindText}, data: []byte("a\x00b"), want: AttachmentSkipped, wantNote: "it is not a text file"},
		{name: "image stored with its sniffed type", att: Attachment{Kind: KindImage, ContentType: "image/jpeg"}, data: png, want: AttachmentStored},
		{name: "an image that is not one", att: Attachment{Kind: KindImage}, data: []byte("<html>"), want: AttachmentSkipped, wantNote: "not a PNG, JPEG, GIF or WebP image"},
		{name: "too large", att: Attachment{Kind: KindText}, err: fmt.Errorf("x: %w", ErrTooLarge), want: AttachmentSkipped, wantNote: "larger than the 8 MB limit per file"},
		{name: "off the CDN", att: Attachment{Kind: KindText}, err: ErrNotOnCDN, want: AttachmentSkipped, wantNote: "its address is not on Discord's CDN, so it was not fetched"},
		{name: "gone", att: Attachment{Kind: KindText}, err: ErrGone, want: AttachmentFailed, wantNote: "Discord no longer serves it"},
		{name: "a failure that may pass", att: Attachment{Kind: KindText, Attempts: 1}, err: errors.New("502"), want: AttachmentPending, retry: true},
		{name: "the last try", att: Attachment{Kind: KindText, Attempts: 3}, err: errors.New("502"), want: AttachmentFailed, wantNote: "the download failed"},
		{name: "claimed once too often", att: Attachment{Kind: KindText, Attempts: 4}, want: AttachmentFailed, wantNote: "the download failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.att.ID, tt.att.URL, tt.att.Attempts = 1, "https://cdn.example/f", max(tt.att.Attempts, 1)
			f := &fetchFake{queue: []Attachment{tt.att}, saved: map[int64]AttachmentResult{},
				download: func(string) ([]byte, string, error) { return tt.data, "", tt.err }}
			fe := NewFetcher(FetcherConfig{Owner: "p"}, f, f, slog.New(slog.DiscardHandler))
			if n, err := fe.Flush(t.Context()); n != 1 || err != nil {
				t.Fatalf("Flush = %d, %v; want one file", n, err)
			}
			r := f.saved[1]
			if r.State != tt.want || r.Note != tt.wantNote || (r.RetryIn > 0) != tt.retry {
				t.Errorf("result = %s %q retry %s, want %s %q (retry %v)", r.State, r.Note, r.RetryIn, tt.want, tt.wantNote, tt.retry)
			}
			if r.State == AttachmentStored && (string(r.Data) != string(tt.data) || r.Size != int64(len(tt.data))) {
				t.Errorf("stored %d bytes (size %d), want %d", len(r.Data), r.Size, len(tt.data))
			}
			if tt.name == "image stored with its sniffed type" && r.ContentType != "image/png" {
				t.Errorf("content type %q, want the bytes' image/png", r.ContentType)
			}
			if tt.att.Attempts > 3 && len(f.urls) > 0 {
				t.Errorf("downloaded %v after the last attempt", f.urls)
			}
		})
	}
}

func TestFetcherGivesBackWhatShutdownInterrupts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	f := &fetchFake{queue: []Attachment{{ID: 1, Kind: KindText, URL: "u", Attempts: 1}}, saved: map[int64]AttachmentResult{}}
	f.download = func(string) ([]byte, string, error) { cancel(); return nil, "", context.Canceled }
	NewFetcher(FetcherConfig{Owner: "p"}, f, f, slog.New(slog.DiscardHandler)).Flush(ctx)
	if r := f.saved[1]; r.State != AttachmentPending || !r.Release {
		t.Errorf("result = %+v, want the file given back for the next start", r)
	}
}
