package master

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	para := strings.Repeat("word ", 300) // 1500 characters
	tests := []struct {
		name string
		text string
		max  int
		want []string
	}{
		{"short", "hello", 2000, []string{"hello"}},
		{"empty", "  ", 2000, nil},
		{"paragraphs", "aaaa bbbb\n\ncccc", 12, []string{"aaaa bbbb", "cccc"}},
		{"lines", "aaaa\nbbbb cccc dddd", 12, []string{"aaaa", "bbbb cccc", "dddd"}},
		{"words", "aaaa bbbb cccc", 10, []string{"aaaa bbbb", "cccc"}},
		{"hard", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"runes", "ééééé", 2, []string{"éé", "éé", "é"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.text, tt.max)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
				t.Errorf("%s: Split(%q, %d) = %q, want %q", tt.name, tt.text, tt.max, got, tt.want)
			}
		})
	}
	long := para + "\n\n" + para + "\n\n" + para
	parts := Split(long, MaxMessageLen)
	if len(parts) != 3 {
		t.Fatalf("Split(3 paragraphs of 1500) gave %d parts, want 3 (one per paragraph)", len(parts))
	}
	for i, p := range parts {
		if n := utf8.RuneCountInString(p); n > MaxMessageLen {
			t.Errorf("part %d has %d characters, want ≤ %d", i, n, MaxMessageLen)
		}
	}
}

func TestTruncate(t *testing.T) {
	t.Parallel()
	if got := Truncate("hello world", 6); got != "hello…" {
		t.Errorf("Truncate = %q, want %q", got, "hello…")
	}
	if got := Truncate("hi", 6); got != "hi" {
		t.Errorf("Truncate = %q, want %q", got, "hi")
	}
}

// Splitting keeps fenced code valid and never cuts inside a mention, a
// link or an emoji sequence.
func TestSplitKeepsMarkdownWhole(t *testing.T) {
	t.Parallel()
	code := "```go\n" + strings.Repeat("fmt.Println(\"hello, world\")\n", 90) + "```"
	family := "👨\u200d👩\u200d👧\u200d👦"
	tests := []struct {
		name  string
		text  string
		max   int
		check func(t *testing.T, parts []string)
	}{
		{"a cut fence is closed and reopened with its language", "Here is the code:\n\n" + code + "\n\nThat is all.", MaxMessageLen,
			func(t *testing.T, parts []string) {
				if len(parts) < 2 {
					t.Fatalf("got %d parts, want the code split", len(parts))
				}
				for i, p := range parts {
					if n := strings.Count(p, "```"); n%2 != 0 {
						t.Errorf("part %d has %d fence markers: its code block is broken:\n%s", i, n, p)
					}
				}
				if !strings.HasPrefix(parts[1], "```go\n") {
					t.Errorf("part 2 starts %q, want the fence reopened with its language", parts[1][:min(20, len(parts[1]))])
				}
			}},
		{"a mention is not cut", strings.Repeat("x", 10) + "<@123456789012345678>after", 24,
			func(t *testing.T, parts []string) { wantWhole(t, parts, "<@123456789012345678>") }},
		{"a Markdown link is not cut", "read the notes: [the project docs](https://x.io/d) now", 40,
			func(t *testing.T, parts []string) { wantWhole(t, parts, "[the project docs](https://x.io/d)") }},
		{"a link is not cut", strings.Repeat("w", 10) + "https://example.com/abc", 25,
			func(t *testing.T, parts []string) { wantWhole(t, parts, "https://example.com/abc") }},
		{"a custom emoji is not cut", strings.Repeat("y", 10) + "<:party:123456789012345678>", 30,
			func(t *testing.T, parts []string) { wantWhole(t, parts, "<:party:123456789012345678>") }},
		{"an emoji sequence is not cut", strings.Repeat("z", 7) + family + "zz", 10,
			func(t *testing.T, parts []string) { wantWhole(t, parts, family) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parts := Split(tt.text, tt.max)
			for i, p := range parts {
				if n := utf8.RuneCountInString(p); n > tt.max {
					t.Errorf("part %d has %d characters, want ≤ %d", i, n, tt.max)
				}
			}
			tt.check(t, parts)
		})
	}
}

// wantWhole fails unless one part holds s whole.
func wantWhole(t *testing.T, parts []string, s string) {
	t.Helper()
	for _, p := range parts {
		if strings.Contains(p, s) {
			return
		}
	}
	t.Errorf("no part holds %q whole: %q", s, parts)
}
