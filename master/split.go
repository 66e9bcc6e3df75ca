package master

import (
	"strings"
	"unicode/utf8"
)

// MaxMessageLen is Discord's limit on a message's content, in characters.
const MaxMessageLen = 2000

// Split breaks text into parts of at most max characters, preferring to
// cut between paragraphs, then between lines, then between words; a word
// longer than max is cut where it must be. Parts are trimmed and never empty.
func Split(text string, max int) []string {
	text = strings.TrimSpace(text)
	var parts []string
	for utf8.RuneCountInString(text) > max {
		cut := cutPoint(text, max)
		part := strings.TrimSpace(text[:cut])
		if part != "" {
			parts = append(parts, part)
		}
		text = strings.TrimSpace(text[cut:])
	}
	if text != "" {
		parts = append(parts, text)
	}
	return parts
}

// cutPoint returns a byte offset at most max characters into s at the best
// boundary available.
func cutPoint(s string, max int) int {
	limit := byteOffset(s, max)
	window := s[:limit]
	for _, sep := range []string{"\n\n", "\n", " "} {
		// Do not cut so early that parts become confetti.
		if i := strings.LastIndex(window, sep); i > limit/4 {
			return i + len(sep)
		}
	}
	return limit
}

// byteOffset is the byte index just after the first n runes of s.
func byteOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// Truncate shortens s to at most max characters, ending with an ellipsis
// when something was cut.
func Truncate(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	if max <= 1 {
		return "…"
	}
	return strings.TrimSpace(s[:byteOffset(s, max-1)]) + "…"
}
