package config

import "fmt"

// HandBack bounds cross-channel work: masters dispatching teams to other
// channels, and teams reporting back.
type HandBack struct {
	Dispatch          bool // CALLON_DISPATCH: masters may start teams in other channels
	DispatchDepth     int  // CALLON_DISPATCH_DEPTH: 1 means a dispatched team cannot dispatch again
	MaxActiveSessions int  // CALLON_MAX_ACTIVE_SESSIONS: active teams per guild, for /callon and dispatch alike
	ReportCap         int  // CALLON_REPORT_CAP: reports between two teams per hour
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
	}
}

// String describes the hand-back settings.
func (h HandBack) String() string {
	return fmt.Sprintf("dispatch=%t dispatch_depth=%d max_active_sessions=%d report_cap=%d",
		h.Dispatch, h.DispatchDepth, h.MaxActiveSessions, h.ReportCap)
}
