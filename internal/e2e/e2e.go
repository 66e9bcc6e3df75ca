// Package e2e is callon against the fakes, as both the end-to-end
// tests of cmd/callon and callon bench set it up: callon's environment for
// a fake Discord (bot/discordfake), a fake model (llm/llmfake) and a
// database, when callon is ready, a team started with /callon, and what
// the bot posted and replied. It is production code (callon bench is a
// subcommand): no testing import; the tests wrap its errors.
package e2e

import (
	"fmt"
	"strings"

	"github.com/callonbot/callon/bot/discordfake"
	"github.com/callonbot/callon/llm/llmfake"
)

// CommandCount is how many slash commands callon registers; callon is
// ready when the fake Discord has them all.
const CommandCount = 8

// Env is callon's environment for the fakes and a database; a world adds
// its own settings to it.
func Env(dc *discordfake.Server, ai *llmfake.Server, dbURL string) map[string]string {
	return map[string]string{
		"DISCORD_TOKEN":   dc.Token(),
		"DISCORD_API_URL": dc.URL(),
		"DATABASE_URL":    dbURL,
		"OPENAI_BASE_URL": ai.URL(),
		"OPENAI_API_KEY":  ai.APIKey(),
	}
}

// Ready reports whether callon is connected to dc with its commands
// registered in guild ("": globally, as without DISCORD_GUILD_ID).
func Ready(dc *discordfake.Server, guild string) bool {
	return dc.Connected() && len(dc.Commands(guild)) == CommandCount
}

// Team runs /callon in #general and returns the new thread's id once the
// kickoff message is in it.
func Team(dc *discordfake.Server, goal string) (string, error) {
	general := dc.ChannelID("general")
	before := len(dc.Threads(general))
	ix, err := dc.SlashCommand(discordfake.SlashCommand{Name: "callon", ChannelID: general,
		Options: []discordfake.CommandOption{discordfake.StringOption("goal", goal)}})
	if err != nil {
		return "", err
	}
	if err := dc.WaitFor(func() bool {
		m, ok := ix.Original()
		return ok && strings.Contains(m.Content, "is ready in")
	}, "/callon to answer with the thread"); err != nil {
		return "", err
	}
	threads := dc.Threads(general)
	if len(threads) != before+1 {
		return "", fmt.Errorf("got %d threads in #general, want %d", len(threads), before+1)
	}
	thread := threads[len(threads)-1].ID
	return thread, dc.WaitFor(func() bool { return len(BotMessages(dc, thread)) >= 1 }, "the kickoff message")
}

// BotMessages lists what the bot posted in a channel, deleted ones left
// out.
func BotMessages(dc *discordfake.Server, channelID string) []discordfake.Message {
	var out []discordfake.Message
	for _, m := range dc.Messages(channelID) {
		if m.AuthorID == dc.BotUserID() && !m.Deleted {
			out = append(out, m)
		}
	}
	return out
}

// Reply lists the bot's messages that reply to msg: the reply's first
// part and the parts after it (which carry no reference), up to the next
// message that is not part of it.
func Reply(dc *discordfake.Server, channelID string, msg discordfake.Message) []discordfake.Message {
	var out []discordfake.Message
	for _, m := range BotMessages(dc, channelID) {
		switch {
		case m.Reference != nil && m.Reference.MessageID == msg.ID:
			out = append(out, m)
		case len(out) > 0 && m.Reference == nil && !IsStatus(m):
			out = append(out, m)
		case len(out) > 0:
			return out
		}
	}
	return out
}

// IsStatus reports whether m is a turn's status message (at work, done,
// waiting or stopped).
func IsStatus(m discordfake.Message) bool {
	return strings.HasPrefix(m.Content, "⏳") || strings.HasPrefix(m.Content, "✅") ||
		strings.HasPrefix(m.Content, "❓") || strings.HasPrefix(m.Content, "⏹")
}
