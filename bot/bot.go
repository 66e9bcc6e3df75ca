package bot

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
}

// Bot is the discordgo adapter: it registers the slash commands, routes
// interactions and messages to the master, and lends the master a
// Messenger.
type Bot struct {
	cfg     Config
	s       *discordgo.Session
	svc     *master.Service
	cmds    *master.Commands
	roles   *master.Roles
	store   Store
	log     *slog.Logger
	appID   string
	botUser string

	approvals *master.Approvals // decides the clicks on Approve and Deny

	ctx context.Context // the bot's lifetime; handlers' work derives from it
	wg  sync.WaitGroup
}

// Store is what command handlers read directly.
type Store interface {
	ActiveSession(ctx context.Context, threadID string) (master.Session, error)
}

// New builds the bot; Run connects it. approvals decides the clicks on
// the Approve and Deny buttons of requests to approve a call of a tool.
func New(cfg Config, svc *master.Service, cmds *master.Commands, roles *master.Roles, approvals *master.Approvals, store Store, logger *slog.Logger) (*Bot, error) {
	s, err := NewSession(cfg.Token, cfg.APIURL, Intents)
	if err != nil {
		return nil, err
	}
	// Events are handled in arrival order, so two quick messages become
	// turns in the order they were posted. Handlers only record and defer;
	// slow work runs on goroutines the bot owns.
	s.SyncEvents = true
	s.StateEnabled = true
	b := &Bot{cfg: cfg, s: s, svc: svc, cmds: cmds, roles: roles, approvals: approvals, store: store, log: logger.With("component", "bot"), appID: cfg.AppID}
	s.AddHandler(b.onReady)
	s.AddHandler(b.onInteraction)
	s.AddHandler(b.onMessage)
	return b, nil
}

// Messenger is the bot's Messenger for the master's outbox and status.
func (b *Bot) Messenger() *Messenger { return NewMessenger(b.s) }

// Run connects to the gateway, registers the commands and serves until
// ctx ends; it then waits for the handlers' work and disconnects.
func (b *Bot) Run(ctx context.Context) error {
	b.ctx = ctx
	if err := b.s.Open(); err != nil {
		return describeGatewayError(fmt.Errorf("connect to Discord gateway: %w", err))
	}
	defer func() {
		b.wg.Wait()
		b.s.Lock() // discordgo reads it under the session lock while reconnecting
		b.s.ShouldReconnectOnError = false
		b.s.Unlock()
		if err := b.s.Close(); err != nil {
			b.log.Warn("close gateway", "err", err)
		}
	}()
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
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := b.s.ApplicationCommandBulkOverwrite(b.appID, b.cfg.GuildID, commandDefinitions(), discordgo.WithContext(rctx)); err != nil {
		return describeAuthError(fmt.Errorf("register slash commands: %w", err))
	}
	where := "globally"
	if b.cfg.GuildID != "" {
		where = "in guild " + b.cfg.GuildID
	}
	b.log.Info("connected", "app_id", b.appID, "bot_user", b.botUser, "commands", len(commands), "registered", where)
	b.log.Info("invite the bot to a server with this URL", "invite_url", InviteURL(b.appID))
	<-ctx.Done()
	return nil
}

// goWork runs f on a goroutine owned by the bot, with a context derived
// from its lifetime and, unless timeout is 0, bounded by timeout.
func (b *Bot) goWork(timeout time.Duration, f func(ctx context.Context)) {
	b.wg.Go(func() {
		ctx, cancel := context.WithCancel(b.ctx)
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
	})
}

func (b *Bot) onMessage(_ *discordgo.Session, m *discordgo.MessageCreate) {
	if m.Author == nil || m.GuildID == "" {
		return
	}
	in := master.Incoming{
		ID: m.ID, GuildID: m.GuildID, ChannelID: m.ChannelID,
		AuthorID: m.Author.ID, AuthorBot: m.Author.Bot, Content: m.Content,
	}
	if b.route(b.ctx, in) == nil {
		return
	}
	// Postgres may be restarting: keep trying in the background, for as
	// long as the bot runs, rather than lose the message (the turn is
	// idempotent on its id, and turns are answered in message order
	// whenever they are recorded). If the bot stops first, the catch-up
	// at the next start finds the message.
	b.goWork(0, func(ctx context.Context) {
		for n := 1; ; n++ {
			t := time.NewTimer(master.Backoff(n, time.Second, time.Minute))
			select {
			case <-ctx.Done():
				t.Stop()
				b.log.Warn("message not routed before stopping; the next start catches it up", "message_id", in.ID, "channel_id", in.ChannelID)
				return
			case <-t.C:
			}
			if b.route(ctx, in) == nil {
				return
			}
		}
	})
}

func (b *Bot) route(ctx context.Context, in master.Incoming) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	created, err := b.svc.HandleMessage(ctx, in)
	if err != nil {
		b.log.Warn("route message", "message_id", in.ID, "channel_id", in.ChannelID, "err", err)
		return err
	}
	if created {
		b.log.Debug("turn recorded", "message_id", in.ID, "channel_id", in.ChannelID)
	}
	return nil
}
