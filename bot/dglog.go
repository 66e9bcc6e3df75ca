package bot

import (
	"fmt"
	"log/slog"
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

func routeDiscordgoLogs(log *slog.Logger) {
	discordgoLog.Store(log.With("component", "discordgo"))
	discordgoHook.Do(func() {
		discordgo.Logger = func(level, _ int, format string, a ...any) {
			l := discordgoLog.Load()
			switch level {
			case discordgo.LogError, discordgo.LogWarning:
				// Mostly connection trouble it recovers from by itself.
				l.Warn(fmt.Sprintf(format, a...))
			default:
				l.Debug(fmt.Sprintf(format, a...))
			}
		}
	})
}
