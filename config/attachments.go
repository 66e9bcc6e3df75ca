package config

import (
	"slices"
	"strconv"
	"strings"
)

// Defaults for the files attached to messages.
const (
	DefaultDiscordCDNURL     = "https://cdn.discordapp.com"
	DefaultDiscordMediaURL   = "https://media.discordapp.net"
	DefaultAttachmentFile    = 8 << 20
	DefaultAttachmentMessage = 16 << 20
)

// Attachments is how the files attached to messages are read.
type Attachments struct {
	// CDNURL is DISCORD_CDN_URL: files are downloaded only from URLs
	// under it (and under Discord's media proxy when it is the default).
	CDNURL     string
	MaxFile    int64 // CALLON_ATTACHMENT_MAX_FILE: bytes of one file
	MaxMessage int64 // CALLON_ATTACHMENT_MAX_MESSAGE: bytes of a message's files together
	// VisionModels is CALLON_VISION_MODELS: the models that are given
	// images, named as the master's or a role's model is.
	VisionModels []string
}

// CDN lists the URL bases files may be downloaded from.
func (a Attachments) CDN() []string {
	if a.CDNURL == DefaultDiscordCDNURL {
		return []string{DefaultDiscordCDNURL, DefaultDiscordMediaURL}
	}
	return []string{a.CDNURL}
}

// Vision reports whether model is given images.
func (a Attachments) Vision(model string) bool { return slices.Contains(a.VisionModels, model) }

func (p *parser) attachments() Attachments {
	a := Attachments{
		CDNURL:     p.url("DISCORD_CDN_URL", DefaultDiscordCDNURL),
		MaxFile:    p.bytes("CALLON_ATTACHMENT_MAX_FILE", DefaultAttachmentFile, 1<<10, 64<<20),
		MaxMessage: p.bytes("CALLON_ATTACHMENT_MAX_MESSAGE", DefaultAttachmentMessage, 1<<10, 256<<20),
	}
	for _, m := range strings.Split(p.getenv("CALLON_VISION_MODELS"), ",") {
		if m = strings.TrimSpace(m); m != "" && !slices.Contains(a.VisionModels, m) {
			a.VisionModels = append(a.VisionModels, m)
		}
	}
	return a
}

// bytes reads a size: a number of bytes, or one with a unit (KB, MB, GB,
// counted in 1024s; KiB, MiB and GiB too), within lo and hi.
func (p *parser) bytes(v string, def, lo, hi int64) int64 {
	s := strings.TrimSpace(p.getenv(v))
	if s == "" {
		return def
	}
	num, unit := s, int64(1)
	upper := strings.ToUpper(s)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(upper, u.suffix) {
			num, unit = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.n
			break
		}
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(num, "_", ""), 10, 64)
	if err != nil || n < 0 || n > hi/unit || n*unit < lo {
		p.fail(v, "must be a size from %d KB to %d MB, such as \"512KB\" or \"8MB\", got %q", lo>>10, hi>>20, s)
		return def
	}
	return n * unit
}
