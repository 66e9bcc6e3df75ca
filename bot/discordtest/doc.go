// Package discordtest is a fake Discord for end-to-end tests: the REST API
// and the websocket gateway on 127.0.0.1, which the real discordgo client
// talks to through bot.NewSession. It never reaches the network.
//
// The fake keeps the state a test asserts on (messages, threads,
// interaction responses, registered commands, call counts) and behaves like
// Discord where bots commonly go wrong: the 3 s interaction deadline and
// single acknowledgement, the 2000-character and embed limits, nonce
// deduplication, private threads when the type is omitted, archived
// threads, MESSAGE_CONTENT stripping, rate limits, and resuming a dropped
// gateway session with replay of the dispatches missed meanwhile.
//
// A test reads like a story:
//
//	func TestAsk(t *testing.T) {
//		t.Parallel()
//		dc := discordtest.New(t, discordtest.WithInteractionDeadline(time.Second))
//		startBot(t, dc.URL(), dc.Token()) // the bot registers its commands and connects
//		dc.WaitConnected(t)
//
//		ix := dc.SlashCommand(t, discordtest.SlashCommand{
//			Name:      "ask",
//			ChannelID: dc.ChannelID("general"),
//			Options:   []discordtest.CommandOption{discordtest.StringOption("question", "why?")},
//		})
//		if got := ix.WaitResponse(t); got.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource {
//			t.Fatalf("got response type %d, want a deferral", got.Type)
//		}
//		dc.WaitFor(t, func() bool {
//			m, ok := ix.Original()
//			return ok && m.Content != ""
//		}, "the answer")
//	}
//
// Where the fake knowingly differs from Discord: a post to an archived
// thread always fails with 50083 (Discord unarchives an unlocked thread
// instead), rate limits happen only when a test asks for them, and there is
// one shard. Dispatch interactions and messages after WaitConnected: with
// no gateway session they are lost (GatewayStats().Dropped counts them).
//
// Dispatches go to every gateway session whose intents cover them
// (GUILD_MESSAGES for MESSAGE_*, GUILDS for THREAD_* and CHANNEL_*); a
// session that is disconnected keeps them for its RESUME. Test helpers that
// take a testing.TB must be called from the test's goroutine; helpers that
// do not take one panic on misuse such as an unknown channel name.
package discordtest
