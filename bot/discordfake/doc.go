// Package discordfake is a fake Discord: the REST API, the websocket
// gateway and a CDN on 127.0.0.1, which the real discordgo client talks to
// through bot.NewSession. It never reaches the network. It is production
// code (no testing import), so that callon bench can run it; tests use it
// through bot/discordtest, which ties it to a testing.TB (closed at the
// test's end, a refused action or a wait that times out fails the test).
//
// The fake keeps the state a test asserts on (messages, threads,
// interaction responses, modals, reactions, registered commands, downloads,
// call counts) and behaves like Discord where bots commonly go wrong: the
// 3 s interaction deadline and single acknowledgement, the 2000-character,
// embed and component limits, nonce deduplication, private threads when
// the type is omitted, archived threads, MESSAGE_CONTENT stripping, rate
// limits, gateway close codes, and resuming a dropped gateway session with
// replay of the dispatches missed meanwhile.
//
// A test reads like a story (through discordtest):
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
// # What a test can drive
//
// Users post with Post, UserMessage and UserMessageWith (attachments,
// served by the fake CDN at CDNURL and MediaURL with signed URLs; count
// fetches with AttachmentDownloads) and react with React. They run slash
// commands (SlashCommand, Autocomplete), click buttons the bot put on its
// messages (ClickButton, interaction type 3) and fill in the modals it
// shows (SubmitModal, type 5); each of these dispatches INTERACTION_CREATE
// with a member, its permissions, a token, and locale and guild_locale
// (en-US unless the test says otherwise). Every interaction must be
// acknowledged once within the deadline, with a callback type that fits
// it: 4, 5 or 9 for a command; 4, 5, 6 (deferred update), 7 (update the
// message) or 9 for a click; 4 or 5 for a submission, and 6 or 7 too when
// a click opened the modal. After 6 or 7, @original is the clicked message.
//
// Guilds have roles and channels permission overwrites, for bots that
// compute permissions themselves: AddRole, SetMemberRoles and SetOverwrite
// change them (dispatching nothing), and they show on GET /guilds/{g}
// (roles, owner_id: the default user owns every guild), GET /channels/{c}
// (permission_overwrites), GET /guilds/{g}/members/{u} (every user is a
// member of every guild) and the member objects of users' messages and
// interactions. An interaction's member permissions stay what the test
// says they are.
//
// A web app may sign people in with OAuth2 (see oauth.go): GET
// /oauth2/authorize redirects at once with a code (AuthorizeAs picks the
// person), POST /api/oauth2/token exchanges it with the client secret
// (OAuthClientSecret), and a Bearer token reads GET /api/v10/users/@me
// and /users/@me/guilds (owner and permissions per guild).
//
// The server validates what the bot sends: message components (at most 5
// action rows of 1 to 5 buttons or one select menu; custom_ids of at most
// 100 characters, unique in the message; link buttons with a url and no
// custom_id; labels of at most 80), modals (a title of at most 45, 1 to 5
// rows of one text input each), and commands with their name and
// description localizations (Discord's 32 locales, the same rules as the
// names and descriptions). Message history (GET /channels/{c}/messages)
// pages with limit, before, after and around. Reactions by the bot are
// recorded on the message.
//
// The gateway counts what a bot does (GatewayStats, IdentifyLog) and can
// refuse it as Discord would: a wrong or revoked token closes with 4004
// (RevokeToken; REST then answers 401), a privileged intent not enabled in
// the portal with 4014 (WithPrivilegedIntents), an invalid shard with 4010,
// too few shards with 4011 (WithShardingRequired). CloseGateway closes
// every connection with any code; StopGateway starts an outage that
// refuses new connections until StartGateway. A session may identify as
// a shard: a
// guild's dispatches go only to the sessions on shard (guild_id >> 22) %
// num_shards (ShardOf), and the fake's guilds, in option order, land on
// shards 0, 1, 2, … for any shard count up to 16.
//
// Dispatches go to every gateway session on the right shard whose intents
// cover them (GUILD_MESSAGES for MESSAGE_*, GUILD_MESSAGE_REACTIONS for
// MESSAGE_REACTION_*, GUILDS for THREAD_*, CHANNEL_* and GUILD_*); a
// session that is disconnected keeps them for its RESUME. Dispatch
// interactions and messages after WaitConnected: with no gateway session
// they are lost (GatewayStats().Dropped counts them). Actions that may be
// refused (an unknown channel, a command that does not fit its
// definition) and waits return an error; helpers panic on misuse such as
// an unknown channel name.
//
// # Where the fake knowingly differs from Discord
//
//   - A post to an archived thread always fails with 50083; Discord
//     unarchives an unlocked thread instead.
//   - Rate limits happen only when a test asks for them (RateLimit, Fail).
//     The 5 s IDENTIFY spacing per max_concurrency bucket and the session
//     start limit are recorded (IdentifyLog, GET /gateway/bot's remaining)
//     but never enforced.
//   - Message history answers 400 when more than one of around, before and
//     after is given. Discord's reference calls them mutually exclusive,
//     but Discord reportedly uses one silently. around returns up to
//     limit/2 older messages and the rest from the id on.
//   - Components are checked as legacy action rows; a message flagged
//     IS_COMPONENTS_V2 is stored unchecked. A test can click buttons but
//     not choose from select menus. Modals take action rows of text inputs
//     only, not the newer label components. The 50035 error codes for
//     components and modals name the field as Discord does, but their
//     codes are descriptive and not always Discord's own.
//   - An answer to a click (or to a modal a click opened) is a reply (type
//     19) to the clicked message. That follows other reimplementations of
//     Discord and was not checked against Discord itself.
//   - Attachment URLs are signed once, for a day, and never refreshed;
//     Discord signs them again whenever the message is fetched. Images get
//     no width or height, and the media proxy does not resize.
//   - The guilds have no custom emoji, so reacting with one answers 10014,
//     and a unicode emoji is any text with a non-ASCII character. Only the
//     bot's own reaction can be removed, and reactions cannot be listed.
//   - There are no DMs. Guild ids are snowflakes from 12 to 24 minutes
//     before the server started, so that they spread over shards.
package discordfake
