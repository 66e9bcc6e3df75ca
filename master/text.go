package master

import (
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
