package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
)

// Intents are the gateway intents callon needs. MESSAGE_CONTENT is
// privileged: enable it for the application in the Developer Portal.
const Intents = discordgo.IntentsGuilds | discordgo.IntentsGuildMessages | discordgo.IntentMessageContent

// Config is how the bot reaches Discord.
type Config struct {
	Token   string
	AppID   string // "" to take it from READY
	GuildID string // register commands here only; "" for global
	APIURL  string // base URL for REST and gateway discovery

	// ShardCount is how many gateway shards the bot has over all its
	// processes: 1 is one unsharded connection; 0 asks Discord for its
	// recommendation (GET /gateway/bot).
	ShardCount int
	// ShardIDs are the shards this process connects; nil: all of them.
	ShardIDs []int
	// IdentifyInterval spaces the IDENTIFYs of shards that share a
	// max_concurrency bucket; 0: Discord's DefaultIdentifyInterval.
	IdentifyInterval time.Duration
	// Metrics counts REST calls and gateway connections; nil: nothing.
	Metrics Metrics
	// ShutdownGrace bounds how long a stopping bot waits for the work of
	// the commands, clicks and forms it acknowledged; past it, that work
	// is cancelled. 0: DefaultShutdownGrace.
	ShutdownGrace time.Duration
}

// DefaultShutdownGrace is how long a stopping bot waits for acknowledged
// work by default: under the 30 s a container runtime commonly gives
// between SIGTERM and SIGKILL (Docker's default of 10 s is raised in the
// compose file).
const DefaultShutdownGrace = 20 * time.Second

// Metrics receives what the bot measures (package metrics implements
// it). Its methods must not block.
type Metrics interface {
	// DiscordRequest counts one REST request by route ("POST
	// /channels/{id}/messages") and HTTP status, 0 when none came.
	DiscordRequest(route string, status int)
	// GatewayConnected sets whether a shard's gateway connection is up.
	GatewayConnected(shard int, up bool)
	// GatewayReconnected counts a shard's connection coming back.
	GatewayReconnected(shard int)
}

type noMetrics struct{}

func (noMetrics) DiscordRequest(string, int) {}
func (noMetrics) GatewayConnected(int, bool) {}
func (noMetrics) GatewayReconnected(int)     {}

// Bot is the discordgo adapter: it registers the slash commands, routes
// interactions and messages to the master, and lends the master a
// Messenger. It runs one gateway session per shard of this process; REST
// calls all go through the first one's session, s, so they share one
// rate limiter.
type Bot struct {
	cfg     Config
	s       *discordgo.Session
	metrics Metrics
	svc     *master.Service
	cmds    *master.Commands
	roles   *master.Roles
	limits  *master.Limits
	store   Store
	log     *slog.Logger
	appID   string
	botUser string

	approvals *master.Approvals     // decides the clicks on Approve and Deny
	features  *master.FeatureConfig // /roles features; nil: not offered (WithPresence)
	memory    *master.MemoryAdmin   // /memory; nil: not offered (WithPresence)
	personas  *personas             // members' parts through webhooks; nil: in callon's voice (WithPresence)
	outage    outage                // the messages the database refused, retried

	ctx context.Context // the bot's lifetime: background work ends with it
	// work outlives ctx: what the bot acknowledged (a command, a click, a
	// form) runs under it to the end, unless stopWork's grace runs out and
	// cancels it (stopAll).
	work    context.Context
	stopAll context.CancelFunc
	wg      sync.WaitGroup // admitted handlers and the work they started

	mu       sync.Mutex
	shards   []*shard // set once Run has planned them
	stopping bool     // set when Run ends: no handler is admitted any more
}

// Store is what command handlers read directly: a thread's team.
type Store interface {
	master.SessionFinder
}

// New builds the bot; Run connects it. approvals decides the clicks on
// the Approve and Deny buttons of requests to approve a call of a tool.
func New(cfg Config, svc *master.Service, cmds *master.Commands, roles *master.Roles, limits *master.Limits, approvals *master.Approvals, store Store, logger *slog.Logger) (*Bot, error) {
	b := &Bot{cfg: cfg, metrics: cfg.Metrics, svc: svc, cmds: cmds, roles: roles, limits: limits, approvals: approvals, store: store,
		log: logger.With("component", "bot"), appID: cfg.AppID}
	if b.metrics == nil {
		b.metrics = noMetrics{}
	}
	routeDiscordgoLogs(logger)
	s, err := b.newSession()
	if err != nil {
		return nil, err
	}
	b.s = s
	return b, nil
}

// newSession returns a gateway session with the bot's handlers, its REST
// calls counted.
func (b *Bot) newSession() (*discordgo.Session, error) {
	s, err := NewSession(b.cfg.Token, b.cfg.APIURL, Intents)
	if err != nil {
		return nil, err
	}
	s.Client.Transport = &metered{next: cmp.Or(s.Client.Transport, http.DefaultTransport), m: b.metrics}
	// Events are handled in arrival order, so two quick messages become
	// turns in the order they were posted. Handlers only record and defer;
	// slow work runs on goroutines the bot owns.
	s.SyncEvents = true
	s.StateEnabled = true
	s.AddHandler(b.onReady)
	s.AddHandler(b.onConnect)
	s.AddHandler(b.onDisconnect)
	s.AddHandler(b.onInteraction)
	s.AddHandler(b.onMessage)
	s.AddHandler(b.onThreadUpdate)
	return s, nil
}

// Messenger is the bot's Messenger for the master's outbox and status.
func (b *Bot) Messenger() *Messenger { return &Messenger{s: b.s, p: b.personas} }

// Run connects this process's shards to the gateway, registers the
// commands (in the process that runs shard 0) and serves until ctx ends;
// it then waits for the handlers' work and disconnects.
func (b *Bot) Run(ctx context.Context) error {
	b.ctx = ctx
	b.work, b.stopAll = context.WithCancel(context.WithoutCancel(ctx))
	defer b.stopAll()
	count, ids, maxConcurrency, err := b.plan(ctx)
	if err != nil {
		return describeAuthError(err)
	}
	sessions := []*discordgo.Session{b.s}
	for range ids[1:] {
		s, err := b.newSession()
		if err != nil {
			return err
		}
		sessions = append(sessions, s)
	}
	shards := make([]*shard, len(ids))
	for i, s := range sessions {
		s.ShardID, s.ShardCount = ids[i], count
		shards[i] = &shard{id: ids[i], s: s}
	}
	b.mu.Lock()
	b.shards = shards
	b.mu.Unlock()
	defer func() {
		b.stopWork()
		closeShards(sessions, func(shard int, err error) { b.log.Warn("close gateway", "shard", shard, "err", err) })
	}()
	if count > 1 {
		b.log.Info("connecting shards", "shards", ids, "shard_count", count, "max_concurrency", maxConcurrency)
	}
	if err := openShards(ctx, sessions, maxConcurrency, cmp.Or(b.cfg.IdentifyInterval, DefaultIdentifyInterval)); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return describeGatewayError(err)
	}
	b.s.State.RLock()
	if b.appID == "" && b.s.State.Application != nil {
		b.appID = b.s.State.Application.ID
	}
	if b.s.State.User != nil {
		b.botUser = b.s.State.User.ID
	}
	b.s.State.RUnlock()
	if b.appID == "" {
		return errors.New("no application id: set DISCORD_APP_ID")
	}
	if ids[0] != 0 {
		// Commands are the application's, not a shard's: one process
		// registers them, the one that runs shard 0.
		b.log.Info("connected", "app_id", b.appID, "bot_user", b.botUser, "shards", ids, "shard_count", count)
		<-ctx.Done()
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := b.s.ApplicationCommandBulkOverwrite(b.appID, b.cfg.GuildID, commandDefinitions(), discordgo.WithContext(rctx)); err != nil {
		return describeAuthError(fmt.Errorf("register slash commands: %w", err))
	}
	where := "globally"
	if b.cfg.GuildID != "" {
		where = "in guild " + b.cfg.GuildID
	}
	b.log.Info("connected", "app_id", b.appID, "bot_user", b.botUser, "shards", ids, "shard_count", count, "commands", len(commands), "registered", where)
	b.log.Info("invite the bot to a server with this URL", "invite_url", InviteURL(b.appID))
	<-ctx.Done()
	return nil
}

// stopWork admits no more handlers and waits for the admitted ones and
// the work they started, up to the shutdown grace; past it, that work is
// cancelled, and waited for again (everything it calls honours its
// context). Gateway handlers may still run until the shards are closed:
// they start nothing.
func (b *Bot) stopWork() {
	b.mu.Lock()
	b.stopping = true
	b.mu.Unlock()
	done := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(done)
	}()
	grace := cmp.Or(b.cfg.ShutdownGrace, DefaultShutdownGrace)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		b.log.Warn("acknowledged work still running after the shutdown grace; cancelling it", "grace", grace)
		b.stopAll()
		<-done
	}
}

// admit lets a gateway handler run: false once the bot is stopping. An
// admitted handler calls b.wg.Done when it returns; until then, work it
// starts with goWork is waited for by stopWork however late it starts.
func (b *Bot) admit() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopping {
		return false
	}
	b.wg.Add(1)
	return true
}

// goWork runs f on a goroutine owned by the bot: work that was
// acknowledged, or that must not stop half-way. Its context is not
// cancelled when the bot stops (stopWork waits for it, up to the grace),
// only by timeout (unless 0) and by the end of the grace. Call it only
// from an admitted handler.
func (b *Bot) goWork(timeout time.Duration, f func(ctx context.Context)) {
	b.wg.Go(func() { b.run(b.work, timeout, f) })
}

// goBackground runs f on a goroutine owned by the bot, with a context
// that ends when the bot stops (and, unless 0, after timeout): work the
// next start redoes anyway, such as catching up or retrying to record a
// message. Once the bot is stopping, f is not run.
func (b *Bot) goBackground(timeout time.Duration, f func(ctx context.Context)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopping {
		return
	}
	b.wg.Go(func() { b.run(b.ctx, timeout, f) })
}

// run calls f under parent, bounded by timeout unless 0; a panic is
// logged, never fatal.
func (b *Bot) run(parent context.Context, timeout time.Duration, f func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	if timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeout(ctx, timeout)
		defer stop()
	}
	// One bad interaction must not take the bot down with it.
	defer func() {
		if r := recover(); r != nil {
			b.log.Error("handler panicked", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	f(ctx)
}

// selfID is the bot user's id as a session knows it once the gateway
// said READY; "" before.
func selfID(s *discordgo.Session) string {
	s.State.RLock()
	defer s.State.RUnlock()
	if s.State.User != nil {
		return s.State.User.ID
	}
	return ""
}

func (b *Bot) onMessage(s *discordgo.Session, m *discordgo.MessageCreate) {
	if m.Author == nil || m.GuildID == "" {
		return
	}
	if !b.admit() {
		return // stopping: the next start's catch-up finds the message
	}
	defer b.wg.Done()
	self := selfID(s)
	if self == "" || m.Author.ID == self || b.personas.own(m.WebhookID) {
		return // callon never reacts to itself, nor to its members' parts
	}
	in := master.Incoming{
		ID: m.ID, GuildID: m.GuildID, ChannelID: m.ChannelID,
		AuthorID: m.Author.ID, AuthorBot: m.Author.Bot, Content: m.Content,
		Attachments: incomingAttachments(m.Attachments),
	}
	if m.Member != nil {
		in.AuthorRoles = m.Member.Roles
	}
	log := b.log.With("shard", s.ShardID, "guild_id", in.GuildID, "channel_id", in.ChannelID, "message_id", in.ID)
	if in.AuthorBot && b.botRequest(log, in, self) {
		return
	}
	if b.route(b.work, log, in) == nil {
		return
	}
	// Postgres may be restarting: keep trying in the background rather
	// than lose the message, a bounded number of messages at once.
	b.retryRoute(s, log, in)
}

func (b *Bot) route(ctx context.Context, log *slog.Logger, in master.Incoming) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	turn, err := b.svc.HandleMessage(ctx, in)
	if err != nil {
		log.Warn("route message", "err", err)
		return err
	}
	if turn.ID != 0 {
		log.Debug("message routed", "session_id", turn.SessionID, "turn_id", turn.ID)
	}
	return nil
}
