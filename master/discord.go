package master

import (
	"errors"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// What the core needs to know of Discord, together here: the core
// decides what a team posts and who may do what, and those decisions
// depend on a few facts of the platform its teams live on. A message
// holds at most 2,000 characters, so the outbox stores a reply as parts
// (Split) and a mention must never be cut; ids are snowflakes, whose time
// orders messages and bounds the catch-up; who may post, manage threads
// or change roles is a permission bit, checked server-side; a button's
// style is a number; a thread has a link; files come from the CDN, whose
// notes people read. Everything Discord shows (status messages, /team,
// roles lists, approval requests, embeds) is written by bot/render, and
// everything said to Discord by bot.

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

// Discord permission bits the commands check, server-side.
const (
	PermAdministrator int64 = 1 << 3
	PermManageThreads int64 = 1 << 34
)

// PermManageGuild is the Discord permission that lets a member change a
// guild's budgets and allow lists, and its guild-wide roles;
// Administrator (PermAdministrator) also does.
const PermManageGuild int64 = 1 << 5

// PermManageChannels is the Discord permission that lets a member change
// a channel's roles; Administrator (PermAdministrator) also does.
const PermManageChannels int64 = 1 << 4

// Discord permission bits that authorization checks, server-side.
const (
	PermViewChannel        int64 = 1 << 10
	PermSendMessages       int64 = 1 << 11
	PermSendInThreads      int64 = 1 << 38
	permViewAndSend              = PermViewChannel | PermSendMessages
	permViewAndSendThreads       = PermViewChannel | PermSendInThreads
)

// MayPost reports whether permissions in a channel (or, when thread is
// set, in a thread) let a member see it and send messages there.
func MayPost(permissions int64, thread bool) bool {
	if permissions&PermAdministrator != 0 {
		return true
	}
	want := permViewAndSend
	if thread {
		want = permViewAndSendThreads
	}
	return permissions&want == want
}

// ButtonStyle is how a button looks: Discord's styles 1 to 4.
type ButtonStyle int

// Button styles.
const (
	ButtonPrimary   ButtonStyle = 1
	ButtonSecondary ButtonStyle = 2
	ButtonSuccess   ButtonStyle = 3
	ButtonDanger    ButtonStyle = 4
)

// Button is a button on a message the team posts. A click reaches the
// bot with CustomID, which routes it.
type Button struct {
	Label    string      `json:"label"`
	Style    ButtonStyle `json:"style"`
	CustomID string      `json:"custom_id"`
}

// JumpURL links to a channel or thread in the Discord client.
func JumpURL(guildID, channelID string) string {
	return "https://discord.com/channels/" + guildID + "/" + channelID
}

// Where files are downloaded from by default: Discord's CDN and its media
// proxy.
const (
	DefaultCDNURL   = "https://cdn.discordapp.com"
	DefaultMediaURL = "https://media.discordapp.net"
)

// Errors a Downloader returns that no retry can change.
var (
	// ErrTooLarge is a file larger than the limit it was fetched with.
	ErrTooLarge = errors.New("larger than the limit")
	// ErrNotOnCDN is an address (or a redirect) outside the CDN.
	ErrNotOnCDN = errors.New("not on Discord's CDN")
	// ErrGone is a file the CDN no longer serves (403, 404, 410).
	ErrGone = errors.New("no longer available")
)

// Notes people read on a file callon did not fetch.
const (
	noteNotOnCDN = "its address is not on Discord's CDN, so it was not fetched"
	noteGone     = "Discord no longer serves it"
)

// SurfaceDiscord is a team in a Discord thread: the default surface.
// Teams start there unless a chat starts them (defaultSurface).
const (
	SurfaceDiscord Surface = "discord"
	defaultSurface         = SurfaceDiscord
)

// PersonaName is the name a member posts under: its role's name in words
// ("market-analyst" → "Market analyst"). Discord refuses a webhook's
// username that contains "discord" or "clyde" or is "everyone" or
// "here", so those are broken up or qualified; anything but ASCII
// letters, digits and spaces is dropped (role names are slugs anyway, so nothing
// else Discord refuses, such as @, # or :, can occur), and it stays
// within the 80 characters allowed.
func PersonaName(role string) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == '_' || r == ' ':
			return ' '
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			return r
		}
		return -1
	}, role)
	name = strings.Join(strings.Fields(name), " ")
	if name == "" {
		return "Member"
	}
	r := []rune(name)
	name = string(unicode.ToUpper(r[0])) + string(r[1:])
	for _, bad := range []string{"discord", "clyde"} {
		for {
			i := strings.Index(strings.ToLower(name), bad)
			if i < 0 {
				break
			}
			name = name[:i+3] + "-" + name[i+3:]
		}
	}
	switch strings.ToLower(name) {
	case "everyone", "here":
		name += " (member)"
	}
	return Truncate(name, 80)
}
