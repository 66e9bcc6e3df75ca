package master

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

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

// MessageParts is text cut into messages (Split at MaxMessageLen).
func MessageParts(text string) []string { return Split(text, MaxMessageLen) }

// Split breaks text into parts of at most max characters, preferring to
// cut between paragraphs, then between lines, then between words; a word
// longer than max is cut where it must be. It never cuts inside a
// mention, a channel or role reference, a timestamp, a custom emoji, a
// link or an emoji sequence, unless one is longer than a part. A cut
// inside a fenced code block closes the fence at the end of the part and
// opens it again, with its language, at the start of the next, so both
// render as code. Parts are trimmed and never empty.
func Split(text string, max int) []string {
	text = strings.TrimSpace(text)
	var parts []string
	for utf8.RuneCountInString(text) > max {
		cut := cutPoint(text, max)
		if _, open := openFence(text[:cut]); open && max > 4*len(fenceClose) {
			cut = cutPoint(text, max-len(fenceClose)) // room to close the fence
		}
		part := strings.TrimSpace(text[:cut])
		rest := strings.TrimSpace(text[cut:])
		if lang, open := openFence(part); open && rest != "" && max > 4*len(fenceClose) {
			part += fenceClose
			reopen := "```" + lang
			if len(reopen) > max/4 {
				reopen = "```"
			}
			rest = reopen + "\n" + rest
		}
		if part != "" {
			parts = append(parts, part)
		}
		text = rest
	}
	if text != "" {
		parts = append(parts, text)
	}
	return parts
}

// fenceClose ends a code block that a part cuts.
const fenceClose = "\n```"

// openFence reports whether s ends inside a fenced code block, and that
// block's language.
func openFence(s string) (lang string, open bool) {
	for line := range strings.Lines(s) {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "```") {
			continue
		}
		if open {
			open, lang = false, ""
		} else {
			open, lang = true, strings.TrimSpace(strings.TrimLeft(t, "`"))
		}
	}
	return lang, open
}

// unbreakable matches what a cut must not fall into: mentions of users,
// roles and channels, timestamps, custom emoji, slash command mentions,
// links, and Markdown links.
var unbreakable = regexp.MustCompile(`<(?:@[!&]?\d+|#\d+|a?:\w+:\d+|t:-?\d+(?::[tTdDfFR])?|/[^<>\s]+:\d+)>|\[[^\]\n]*\]\([^)\s]*\)|https?://\S+`)

// cutPoint returns a byte offset at most max characters into s at the best
// boundary available.
func cutPoint(s string, max int) int {
	limit := byteOffset(s, max)
	cut := limit
	window := s[:limit]
	for _, sep := range []string{"\n\n", "\n", " "} {
		// Do not cut so early that parts become confetti.
		if i := strings.LastIndex(window, sep); i > limit/4 {
			cut = i + len(sep)
			break
		}
	}
	// Move a cut that falls inside something unbreakable to before it,
	// unless that leaves too little; then after it if it fits.
	for _, span := range unbreakable.FindAllStringIndex(s[:min(len(s), limit+2*MaxMessageLen)], -1) {
		if span[0] < cut && cut < span[1] {
			switch {
			case span[0] > limit/4:
				cut = span[0]
			case span[1] <= limit:
				cut = span[1]
			}
			break
		}
	}
	if cut == limit {
		cut = graphemeStart(s, cut)
	}
	return cut
}

// graphemeStart moves a hard cut back to the start of the emoji sequence
// or combined character it would split: before a zero-width joiner, a
// variation selector, a skin-tone modifier or a combining mark, and
// before what a joiner joins.
func graphemeStart(s string, i int) int {
	for i > 0 && i < len(s) {
		r, _ := utf8.DecodeRuneInString(s[i:])
		prev, size := utf8.DecodeLastRuneInString(s[:i])
		if !joins(r) && prev != '\u200d' {
			break
		}
		i -= size
	}
	if i == 0 {
		return len(s[:byteOffset(s, 1)]) // a part must hold something
	}
	return i
}

// joins reports whether r belongs to the character before it.
func joins(r rune) bool {
	return r == '\u200d' || (r >= 0xfe00 && r <= 0xfe0f) || (r >= 0x1f3fb && r <= 0x1f3ff) ||
		unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r)
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
