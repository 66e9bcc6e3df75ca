package discordfake

import (
	"time"

	"github.com/bwmarrin/discordgo"
)

// config is what the options set.
type config struct {
	guilds        []guildSpec
	botUserID     string
	botName       string
	appID         string
	token         string
	heartbeat     time.Duration
	deadline      time.Duration
	tokenLifetime time.Duration
	waitTimeout   time.Duration
	privileged    discordgo.Intent // enabled in the Developer Portal
	publicBot     bool             // Bot → Public Bot in the Developer Portal

	shardsRequired    int // IDENTIFYs with fewer shards are closed with 4011
	recommendedShards int // GET /gateway/bot's shards
	maxConcurrency    int // GET /gateway/bot's max_concurrency
}

type guildSpec struct {
	name     string
	channels []string
}

func defaultConfig() config {
	return config{
		botName: "callon",
		token:   "test-token",
		// Long enough that discordgo's heartbeat rarely fires during the
		// one second Close() sleeps (see DISCORD.md, teardown pitfall).
		heartbeat:     10 * time.Second,
		deadline:      3 * time.Second,
		tokenLifetime: 15 * time.Minute,
		waitTimeout:   10 * time.Second,
		privileged:    privilegedIntents,

		recommendedShards: 1,
		maxConcurrency:    1,
	}
}

// Option configures a Server.
type Option func(*config)

// WithGuild adds a guild with the named text channels. The first use
// replaces the default guild ("G" with channels "general" and "random").
func WithGuild(name string, channels ...string) Option {
	return func(c *config) {
		c.guilds = append(c.guilds, guildSpec{name: name, channels: channels})
	}
}

// WithBotUser sets the bot user's id and name. By default the id is a fresh
// snowflake and the name is "callon".
func WithBotUser(id, name string) Option {
	return func(c *config) {
		c.botUserID = id
		c.botName = name
	}
}

// WithApplicationID sets the application id. By default it is a fresh
// snowflake, different from the bot user's id so that a bot mixing the two
// up is caught.
func WithApplicationID(id string) Option {
	return func(c *config) { c.appID = id }
}

// WithToken sets the bot token the server accepts, without the "Bot "
// prefix. The default is "test-token".
func WithToken(token string) Option {
	return func(c *config) { c.token = token }
}

// WithHeartbeatInterval sets the interval sent in HELLO; values under a
// millisecond are ignored, since discordgo panics on zero. The default is
// 10 s. Short intervals make discordgo's Close() reconnect now and then (it
// sleeps a second while its heartbeat can still fire), so keep it at
// seconds.
func WithHeartbeatInterval(d time.Duration) Option {
	return func(c *config) {
		if d >= time.Millisecond {
			c.heartbeat = d
		}
	}
}

// WithInteractionDeadline sets how long after its dispatch an interaction
// may be acknowledged. Discord allows 3 s, the default.
func WithInteractionDeadline(d time.Duration) Option {
	return func(c *config) { c.deadline = d }
}

// WithTokenLifetime sets how long after its dispatch an interaction token
// may be used for edits and follow-ups. Discord allows 15 minutes, the
// default.
func WithTokenLifetime(d time.Duration) Option {
	return func(c *config) { c.tokenLifetime = d }
}

// WithWaitTimeout sets how long WaitFor and the other Wait methods wait
// before failing the test. The default is 10 s.
func WithWaitTimeout(d time.Duration) Option {
	return func(c *config) { c.waitTimeout = d }
}

// WithoutPrivilegedIntents makes the application lack the privileged
// intents (MESSAGE_CONTENT, GUILD_MEMBERS, GUILD_PRESENCES) in the
// Developer Portal; it is WithPrivilegedIntents(0).
func WithoutPrivilegedIntents() Option {
	return WithPrivilegedIntents(0)
}

// WithPrivilegedIntents sets which privileged intents are enabled in the
// Developer Portal; by default all three are. An IDENTIFY asking for one
// that is not enabled is closed with 4014 "Disallowed intent(s).", as
// Discord does. Without MESSAGE_CONTENT enabled, messages fetched over
// REST lose their content too (except the bot's own and those mentioning
// it), and GET /applications/@me reports the flags accordingly.
func WithPrivilegedIntents(enabled discordgo.Intent) Option {
	return func(c *config) { c.privileged = enabled & privilegedIntents }
}

// WithPublicBot makes the application a public bot (Bot → Public Bot in
// the Developer Portal: anyone may add it to a server), as GET
// /applications/@me reports; by default it is not.
func WithPublicBot() Option {
	return func(c *config) { c.publicBot = true }
}

// WithShardingRequired makes the bot too big for fewer than n shards, as
// Discord does from 2,500 guilds: an IDENTIFY with a num_shards under n
// (or without shard, which counts as one) is closed with 4011 "Sharding
// required.". It also sets the recommended shard count of GET /gateway/bot
// to n, unless WithRecommendedShards says otherwise.
func WithShardingRequired(n int) Option {
	return func(c *config) {
		c.shardsRequired = n
		c.recommendedShards = max(c.recommendedShards, n)
	}
}

// WithRecommendedShards sets the shards GET /gateway/bot recommends; the
// default is 1.
func WithRecommendedShards(n int) Option {
	return func(c *config) { c.recommendedShards = max(n, 1) }
}

// WithMaxConcurrency sets session_start_limit.max_concurrency of GET
// /gateway/bot; the default is 1. Shards whose shard_id % max_concurrency
// are equal must IDENTIFY at least 5 s apart on Discord. The fake does not
// enforce that, to keep tests fast; IdentifyLog records when each shard
// identified, for a test to check.
func WithMaxConcurrency(n int) Option {
	return func(c *config) { c.maxConcurrency = max(n, 1) }
}
