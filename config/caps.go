package config

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Caps bound what people may make callon spend, and how long it keeps
// what it did (docs/limits.md). CALLON_MAX_ACTIVE_SESSIONS is
// in HandBack and CALLON_MAX_SESSION_TOKENS in Limits, where they began.
type Caps struct {
	MaxUserSessions    int              // CALLON_MAX_USER_SESSIONS: active teams one person may run in a guild; 0: no cap
	GuildDailyTokens   int64            // CALLON_GUILD_DAILY_TOKENS: tokens per guild per UTC day; 0: no limit
	MaxQueuedTurns     int              // CALLON_MAX_QUEUED_TURNS: a thread's messages waiting or being answered
	UserTurnsPerMinute int              // CALLON_USER_TURNS_PER_MINUTE: messages one person may send teams per minute; 0: no limit
	Prices             map[string]Price // CALLON_PRICES: by model
	Retention          time.Duration    // CALLON_RETENTION: how long ended sessions' rows are kept; 0: for ever
	SessionIdle        time.Duration    // CALLON_SESSION_IDLE: how long a team may be idle before it goes dormant; 0: never
}

// Price is a model's price in US dollars per million tokens.
type Price struct {
	In, Out float64
}

// Caps defaults.
const (
	DefaultMaxUserSessions    = 5
	DefaultMaxQueuedTurns     = 5
	DefaultUserTurnsPerMinute = 10
	DefaultRetention          = 720 * time.Hour
	DefaultSessionIdle        = 7 * 24 * time.Hour
)

func (p *parser) caps() Caps {
	return Caps{
		MaxUserSessions:    p.int("CALLON_MAX_USER_SESSIONS", DefaultMaxUserSessions, 0, 10000),
		GuildDailyTokens:   int64(p.int("CALLON_GUILD_DAILY_TOKENS", 0, 0, 1<<53)),
		MaxQueuedTurns:     p.int("CALLON_MAX_QUEUED_TURNS", DefaultMaxQueuedTurns, 1, 1000),
		UserTurnsPerMinute: p.int("CALLON_USER_TURNS_PER_MINUTE", DefaultUserTurnsPerMinute, 0, 10000),
		Prices:             p.prices("CALLON_PRICES"),
		Retention:          p.retention("CALLON_RETENTION"),
		SessionIdle:        p.orNever("CALLON_SESSION_IDLE", DefaultSessionIdle),
	}
}

// prices parses "model=in/out,…": US dollars per million prompt and
// completion tokens of each model.
func (p *parser) prices(v string) map[string]Price {
	s := strings.TrimSpace(p.getenv(v))
	if s == "" {
		return nil
	}
	out := map[string]Price{}
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		i := strings.LastIndex(entry, "=")
		model, rates := "", ""
		if i > 0 {
			model, rates = strings.TrimSpace(entry[:i]), strings.TrimSpace(entry[i+1:])
		}
		in, outRate, ok := strings.Cut(rates, "/")
		pin, err1 := strconv.ParseFloat(strings.TrimSpace(in), 64)
		pout, err2 := strconv.ParseFloat(strings.TrimSpace(outRate), 64)
		if model == "" || !ok || err1 != nil || err2 != nil || pin < 0 || pout < 0 || pin > 1e6 || pout > 1e6 {
			p.fail(v, "must be model=in/out entries separated by commas, in US dollars per million tokens (such as gpt-4o=2.5/10), got %q", entry)
			continue
		}
		out[model] = Price{In: pin, Out: pout}
	}
	return out
}

// retention is a duration of at least a second, or 0 (keep everything).
func (p *parser) retention(v string) time.Duration { return p.orNever(v, DefaultRetention) }

// orNever is a duration of at least a second, or 0 (never).
func (p *parser) orNever(v string, def time.Duration) time.Duration {
	s := strings.TrimSpace(p.getenv(v))
	if s == "0" {
		return 0
	}
	return p.duration(v, def, time.Second, 100*365*24*time.Hour)
}

// String describes the caps.
func (c Caps) String() string {
	return fmt.Sprintf("max_user_sessions=%d guild_daily_tokens=%d max_queued_turns=%d user_turns_per_minute=%d prices=%s retention=%s session_idle=%s",
		c.MaxUserSessions, c.GuildDailyTokens, c.MaxQueuedTurns, c.UserTurnsPerMinute, c.pricesString(), c.Retention, c.SessionIdle)
}

// pricesString is the prices as CALLON_PRICES writes them.
func (c Caps) pricesString() string {
	prices := make([]string, 0, len(c.Prices))
	for _, m := range slices.Sorted(maps.Keys(c.Prices)) {
		prices = append(prices, fmt.Sprintf("%s=%g/%g", m, c.Prices[m].In, c.Prices[m].Out))
	}
	return strings.Join(prices, ",")
}
