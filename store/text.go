package store

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// cleanText makes text from users and models storable: Postgres refuses
// NUL in text and invalid UTF-8, so a NUL becomes U+FFFD and invalid
// bytes do too. Nothing else changes, and nothing is dropped. Every text
// from outside passes it before it reaches a column.
func cleanText(s string) string {
	if strings.IndexByte(s, 0) < 0 && utf8.ValidString(s) {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// marshalJSON encodes v for a jsonb column. Postgres refuses the escape
// \u0000 in jsonb, so a NUL in any string becomes U+FFFD, as cleanText
// does for text columns.
func marshalJSON(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return cleanJSON(b), nil
}

// cleanJSON replaces every \u0000 escape of a JSON text (one not itself
// escaped, as in "\\u0000") with \ufffd.
func cleanJSON(b []byte) []byte {
	const nul = `\u0000`
	if !bytes.Contains(b, []byte(nul)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' && i+1 < len(b) {
			if bytes.HasPrefix(b[i:], []byte(nul)) {
				out = append(out, `\ufffd`...)
				i += len(nul) - 1
				continue
			}
			out = append(out, b[i], b[i+1]) // an escape: keep both bytes
			i++
			continue
		}
		out = append(out, b[i])
	}
	return out
}

// cleanAll applies cleanText to each string.
func cleanAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = cleanText(s)
	}
	return out
}
