package bot

import (
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"

	"github.com/bwmarrin/discordgo"
)

// discordgo logs through one package-level hook, discordgo.Logger, or
// else in plain text on stderr. The bot points the hook at its own logger
// (the latest bot's, in a process that makes several), so that in JSON
// mode discordgo's lines are JSON too. The hook is set once, before the
// bot makes its first session.
var (
	discordgoLog  atomic.Pointer[slog.Logger]
	discordgoHook sync.Once
)

// webhookToken finds the token in a webhook's URL path.
var webhookToken = regexp.MustCompile(`/webhooks/(\d+)/[^/?\s]+`)

func routeDiscordgoLogs(log *slog.Logger) {
	discordgoLog.Store(log.With("component", "discordgo"))
	discordgoHook.Do(func() {
		discordgo.Logger = func(level, _ int, format string, a ...any) {
			l := discordgoLog.Load()
			// discordgo names the URL of a request it retries: a webhook's
			// (or an interaction's) token is in its path.
			msg := webhookToken.ReplaceAllString(fmt.Sprintf(format, a...), "/webhooks/$1/{token}")
			switch level {
			case discordgo.LogError, discordgo.LogWarning:
				// Mostly connection trouble it recovers from by itself.
				l.Warn(msg)
			default:
				l.Debug(msg)
			}
		}
	})
}
