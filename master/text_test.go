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
		got := Split(tt.text, tt.max)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("%s: Split(%q, %d) = %q, want %q", tt.name, tt.text, tt.max, got, tt.want)
		}
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
