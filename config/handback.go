package config

import (
	"fmt"
	"strconv"
	"strings"
)

// HandBack bounds cross-channel work: masters dispatching teams to other
// channels, and teams reporting back.
type HandBack struct {
	Dispatch          bool // CALLON_DISPATCH: masters may start teams in other channels
	DispatchDepth     int  // CALLON_DISPATCH_DEPTH: 1 means a dispatched team cannot dispatch again
	MaxActiveSessions int  // CALLON_MAX_ACTIVE_SESSIONS: active teams per guild, for /callon and dispatch alike
	ReportCap         int  // CALLON_REPORT_CAP: reports between two teams per hour, and a bot's turns per hour in a guild
	// TrustedBots (CALLON_TRUSTED_BOTS) are the bot user ids every guild
	// listens to; empty by default: callon ignores every bot.
	TrustedBots []string
}

// Hand-back defaults.
const (
	DefaultDispatchDepth     = 1
	DefaultMaxActiveSessions = 20
	DefaultReportCap         = 10
)

func (p *parser) handBack() HandBack {
	return HandBack{
		Dispatch:          p.oneOf("CALLON_DISPATCH", "off", "off", "on") == "on",
		DispatchDepth:     p.int("CALLON_DISPATCH_DEPTH", DefaultDispatchDepth, 1, 10),
		MaxActiveSessions: p.int("CALLON_MAX_ACTIVE_SESSIONS", DefaultMaxActiveSessions, 1, 10000),
		ReportCap:         p.int("CALLON_REPORT_CAP", DefaultReportCap, 1, 1000),
		TrustedBots:       p.snowflakes("CALLON_TRUSTED_BOTS"),
	}
}

// snowflakes reads a comma-separated list of Discord ids.
func (p *parser) snowflakes(v string) []string {
	var ids []string
	for f := range strings.SplitSeq(p.getenv(v), ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if _, err := strconv.ParseUint(f, 10, 64); err != nil {
			p.fail(v, "must be numeric Discord ids, comma-separated, got %q", f)
			return nil
		}
		ids = append(ids, f)
	}
	return ids
}

// String describes the hand-back settings.
func (h HandBack) String() string {
	return fmt.Sprintf("dispatch=%t dispatch_depth=%d max_active_sessions=%d report_cap=%d trusted_bots=%s",
		h.Dispatch, h.DispatchDepth, h.MaxActiveSessions, h.ReportCap, strings.Join(h.TrustedBots, ","))
}
