package master

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// CleanText makes text from users and models storable: Postgres refuses
// NUL in text and invalid UTF-8, so a NUL becomes U+FFFD and invalid
// bytes do too. Nothing else changes, and nothing is dropped.
func CleanText(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// discordEpoch is the first millisecond of 2015, where snowflakes start.
const discordEpoch = 1420070400000

// Snowflake is the smallest Discord id of a message posted at t: ids
// compare like the times they were made at.
func Snowflake(t time.Time) int64 {
	ms := t.UnixMilli() - discordEpoch
	if ms < 0 {
		return 0
	}
	return ms << 22
}

// SnowflakeTime is when the Discord object with id was made; the zero
// time when id is not a snowflake.
func SnowflakeTime(id string) time.Time {
	n, ok := ParseSnowflake(id)
	if !ok {
		return time.Time{}
	}
	return time.UnixMilli(n>>22 + discordEpoch)
}

// ParseSnowflake reads a Discord id; false when it is not one.
func ParseSnowflake(id string) (int64, bool) {
	if id == "" || len(id) > 19 {
		return 0, false
	}
	var n int64
	for _, r := range id {
		if r < '0' || r > '9' {
			return 0, false
		}
		d := int64(r - '0')
		if n > (1<<63-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

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

func oneLine(s string, max int) string {
	return Truncate(strings.Join(strings.Fields(s), " "), max)
}

// Elapsed renders a duration for people: "12 s", "3 m 05 s", "1 h 02 m".
func Elapsed(d time.Duration) string {
	s := int(max(d, 0).Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%d s", s)
	case s < 3600:
		return fmt.Sprintf("%d m %02d s", s/60, s%60)
	default:
		return fmt.Sprintf("%d h %02d m", s/3600, s%3600/60)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
