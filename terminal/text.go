package terminal

import (
	"fmt"
	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/master"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Clean removes what could steer a terminal from text: every control
// character but newline and tab (ESC above all, which starts escape
// sequences; carriage returns, which overwrite a line) and the Unicode
// controls that reorder text. Text from models, people and files passes
// it before it is shown.
func Clean(text string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case unicode.Is(unicode.Cc, r):
			return -1
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
			return -1 // bidirectional overrides, isolates and marks
		}
		return r
	}, text)
}

var (
	userMention    = regexp.MustCompile(`<@!?([A-Za-z0-9_-]+)>`)
	roleMention    = regexp.MustCompile(`<@&[0-9]+>`)
	channelMention = regexp.MustCompile(`<#([A-Za-z0-9_-]+)>`)
	timestamp      = regexp.MustCompile(`<t:(-?[0-9]{1,13})(?::([tTdDfFR]))?>`)
	slashCallon    = regexp.MustCompile("`/callon( [^`]*)?`")
)

// Words turns Discord's markup into a terminal's words.
type Words struct {
	// Names gives a person's name for a user id; "" makes "someone".
	Names func(id string) string
	// Channels gives a channel's name for its id; "" makes "a channel".
	Channels func(id string) string
	Now      func() time.Time
	Loc      *time.Location // nil: local time
}

// Translate returns text (cleaned) with Discord's markup in terminal
// words: mentions become names, <t:…> a time in Loc, and "/callon" the
// command that starts a team here. Subtext lines ("-# …") stay: Split
// takes them out for the renderer.
func (w Words) Translate(text string) string {
	text = Clean(text)
	text = userMention.ReplaceAllStringFunc(text, func(m string) string {
		id := userMention.FindStringSubmatch(m)[1]
		if w.Names != nil {
			if n := w.Names(id); n != "" {
				return n
			}
		}
		return "someone"
	})
	text = roleMention.ReplaceAllString(text, "a role")
	text = channelMention.ReplaceAllStringFunc(text, func(m string) string {
		id := channelMention.FindStringSubmatch(m)[1]
		if w.Channels != nil {
			if n := w.Channels(id); n != "" {
				return n
			}
		}
		return "a channel"
	})
	text = timestamp.ReplaceAllStringFunc(text, func(m string) string {
		g := timestamp.FindStringSubmatch(m)
		sec, err := strconv.ParseInt(g[1], 10, 64)
		if err != nil {
			return m
		}
		return w.time(time.Unix(sec, 0), g[2])
	})
	text = strings.ReplaceAll(text, render.Deciders+" can approve or deny it", "You can approve or deny it")
	text = strings.ReplaceAll(text, master.ArchivedNote, "Start another team with `callon chat --goal \"…\"`.")
	text = slashCallon.ReplaceAllString(text, "`callon chat --goal \"…\"`")
	return text
}

// time writes t as Discord's timestamp style would show it.
func (w Words) time(t time.Time, style string) string {
	loc := w.Loc
	if loc == nil {
		loc = time.Local
	}
	t = t.In(loc)
	switch style {
	case "t":
		return t.Format("15:04")
	case "T":
		return t.Format("15:04:05")
	case "d":
		return t.Format("2006-01-02")
	case "D":
		return t.Format("2 January 2006")
	case "F":
		return t.Format("Monday, 2 January 2006 15:04")
	case "R":
		now := time.Now()
		if w.Now != nil {
			now = w.Now()
		}
		return relative(t.Sub(now))
	default: // f
		return t.Format("2 January 2006 15:04")
	}
}

// relative says how far d is from now: "in 5 minutes", "2 hours ago".
func relative(d time.Duration) string {
	future := d > 0
	if d < 0 {
		d = -d
	}
	var n int64
	var unit string
	switch {
	case d < 45*time.Second:
		return "just now"
	case d < 45*time.Minute:
		n, unit = int64((d+30*time.Second)/time.Minute), "minute"
	case d < 22*time.Hour:
		n, unit = int64((d+30*time.Minute)/time.Hour), "hour"
	default:
		n, unit = int64((d+12*time.Hour)/(24*time.Hour)), "day"
	}
	if n != 1 {
		unit += "s"
	}
	if future {
		return fmt.Sprintf("in %d %s", n, unit)
	}
	return fmt.Sprintf("%d %s ago", n, unit)
}

// Split takes a message's subtext lines ("-# …", which Discord shows
// small and grey) out of its body, in order.
func Split(text string) (body string, subtext []string) {
	lines := strings.Split(text, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if s, ok := strings.CutPrefix(l, "-# "); ok {
			subtext = append(subtext, strings.TrimSpace(s))
			continue
		}
		kept = append(kept, l)
	}
	return strings.TrimRight(strings.Join(kept, "\n"), "\n "), subtext
}
