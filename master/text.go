package master

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

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
