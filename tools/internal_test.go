package tools

import (
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestTruncate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s     string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"0123456789abc", 10, "0123456789\n[output truncated: 10 of 13 bytes]"},
		{"ééééé", 5, "éé\n[output truncated: 4 of 10 bytes]"}, // never half a character
	}
	for _, tc := range tests {
		if got := truncate(tc.s, tc.limit); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.s, tc.limit, got, tc.want)
		}
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	size := int64(10)
	tests := []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"texts joined", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, "a\nb"},
		{"image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 12<<10)}}}, "[image: image/png, 12 KiB]"},
		{"audio", &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 3<<20)}}}, "[audio: audio/wav, 3.0 MiB]"},
		{"link", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ResourceLink{Name: "notes", URI: "file:///notes.txt", Size: &size}}}, "[resource link: notes file:///notes.txt]"},
		{"text resource", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://a", Text: "hello"}}}}, "[resource: mem://a]\nhello"},
		{"blob resource", &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://b", MIMEType: "application/pdf", Blob: make([]byte, 100)}}}}, "[resource: mem://b, application/pdf, 100 B]"},
		{"structured only", &mcp.CallToolResult{StructuredContent: map[string]int{"sum": 3}}, `{"sum":3}`},
		{"nothing", &mcp.CallToolResult{}, "(no output)"},
		{"error without text", &mcp.CallToolResult{IsError: true}, "the tool failed without saying why"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(tc.res); got != tc.want {
				t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	s := &server{m: &Manager{opts: Options{RestartDelay: time.Second, MaxRestartDelay: 10 * time.Second}}}
	var got []time.Duration
	for s.failures = 1; s.failures <= 7; s.failures++ {
		got = append(got, s.backoff())
	}
	want := []time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("got waits %v, want %v", got, want)
	}
	s.failures = 1 << 20
	if d := s.backoff(); d != 10*time.Second {
		t.Errorf("after many failures: got %s, want the 10s bound", d)
	}
}

func TestEnviron(t *testing.T) {
	t.Parallel()
	got := environ([]string{"PATH=/bin", "HOME=/root"}, map[string]string{"HOME": "/srv", "B": "2", "A": "1"})
	if want := []string{"PATH=/bin", "A=1", "B=2", "HOME=/srv"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestTailWriter(t *testing.T) {
	t.Parallel()
	var w tailWriter
	w.Write([]byte("starting\n\n  loading config  \n"))
	w.Write([]byte("fatal: no"))
	w.Write([]byte(" database\n"))
	if got, want := w.String(), "starting | loading config | fatal: no database"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	for range 100 {
		w.Write([]byte("0123456789012345678901234567890123456789\n"))
	}
	if got := w.String(); len(got) > 310 || len(w.buf) > stderrKept {
		t.Errorf("got %d bytes shown, %d kept; want them bounded", len(got), len(w.buf))
	}
}
