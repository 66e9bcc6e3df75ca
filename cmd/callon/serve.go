package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/callonbot/callon/api"
	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/internal/proc"
	"github.com/callonbot/callon/llm"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/metrics"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/workers"
)

func migrate(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) error {
	st, err := store.Open(ctx, cfg.DatabaseURL, log)
	if err != nil {
		return err
	}
	defer st.Close()
	n, err := st.Migrate(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "applied %d migration(s)\n", n)
	return nil
}

// serve runs the worker pool, and with withBot the Discord bot, the
// master, the outbox and the status messages, until ctx ends. opts adjust
// the store (callon bench counts statements with one).
func serve(ctx context.Context, cfg config.Config, log *slog.Logger, withBot bool, opts ...store.Option) error {
	if cfg.Limits.WorkerSlots == 0 && !withBot {
		return errors.New("CALLON_CONCURRENT_TASKS is 0: a worker process needs at least one task slot")
	}
	toolMgr, err := newTools(cfg, log)
	if err != nil {
		return err
	}
	defer closeTools(toolMgr, log)
	roleFile, rolePolicy, err := rolesConfig(cfg, toolMgr)
	if err != nil {
		return err
	}
	toolFindings, err := checkToolsAtStart(ctx, toolMgr, cfg)
	if err != nil {
		return err
	}
	bi := build()
	log.Info("starting callon", "version", bi.Version, "revision", bi.Revision, "bot", withBot, "config", cfg.Summary())
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, log, opts...)
	if err != nil {
		return err
	}
	defer st.Close()
	roles, err := master.NewRoles(st, roleFile, rolePolicy)
	if err != nil {
		return err
	}
	features := master.NewFeatureConfig(st, fileFeatures(cfg.Features))
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	if cfg.Webhook.Enabled() {
		st.EnableWebhooks(true) // before anything that changes state runs
	}
	var apiHandler http.Handler       // the inbound API, when this process runs the bot
	var guildName func(string) string // the bot's names of guilds, for the dashboard
	st.SetMaxAttempts(cfg.Limits.MaxAttempts)
	owner := proc.NewOwner()
	log = log.With("owner", owner)
	lim := cfg.Limits
	budget := master.Budget{SessionTokens: lim.SessionTokens, GuildDailyTokens: cfg.Caps.GuildDailyTokens}
	prices := master.Prices{}
	metricPrices := map[string]metrics.Price{}
	for m, p := range cfg.Caps.Prices {
		prices[m] = master.Price{In: p.In, Out: p.Out}
		metricPrices[m] = metrics.Price{Prompt: p.In, Completion: p.Out}
	}
	reg := metrics.New(metrics.Config{Build: bi, Backlog: st, Prices: metricPrices, Roles: roleNames(roleFile)})
	model := modelRouter(cfg, log)
	masterModel, workerModel := reg.LLM("master", model), reg.LLM("worker", model)
	checks := map[string]check{"database": func(ctx context.Context) string {
		if err := st.Ping(ctx); err != nil {
			return "not answering"
		}
		return ""
	}}
	listener := st.NewListener()
	live := st.NewLiveness(owner)

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return listener.Run(ctx) })
	g.Go(func() error { return live.Run(ctx) })
	g.Go(func() error { return live.Watch(ctx) })
	g.Go(func() error {
		fs := checkModels(ctx, model, cfg)
		if withBot {
			fs = append(fs, checkDiscord(ctx, cfg, discordLimits{guilds: 1, channels: 10, guildOnly: true, known: st.TeamChannels, features: features.For})...)
		}
		if ctx.Err() == nil {
			logSummary(log, "start-up checks done (callon doctor checks more)", append(toolFindings, fs...))
		}
		return nil
	})
	// Every process may purge; one at a time does (an advisory lock).
	retention := master.NewRetention(master.RetentionConfig{Keep: cfg.Caps.Retention}, st, log)
	g.Go(func() error { return retention.Run(ctx) })
	// Every process may put idle teams to sleep; the claim skips rows
	// another one is changing.
	dormancy := master.NewDormancy(master.DormancyConfig{Idle: cfg.Caps.SessionIdle}, st, log)
	g.Go(func() error { return dormancy.Run(ctx) })
	// Each consumer is woken for its own kind of work only.
	wake := func(kinds ...store.Kinds) <-chan string {
		ch, _ := listener.Subscribe(kinds...)
		return ch
	}
	cancelSession := func(int64) {} // other processes hear of it through the wake-up
	if lim.WorkerSlots > 0 {
		pool := workers.New(workers.Config{
			ID:          owner,
			Slots:       lim.WorkerSlots,
			Lease:       lim.TaskLease,
			Heartbeat:   lim.Heartbeat(),
			SweepEvery:  lim.SweepInterval,
			TaskTimeout: lim.TaskTimeout,
			WorkerModel: cfg.WorkerModel,
			Budget:      budget,
			MaxOutput:   lim.MaxOutput,
			Wake:        wake(store.WakeTasks),
			Metrics:     reg,
			Vision:      cfg.Attachments.Vision,
			Tools:       toolMgr,

			ApprovalTimeout: cfg.Tools.ApprovalTimeout,
			Ask:             render.Ask,
		}, st, workerModel, log)
		g.Go(func() error { return pool.Run(ctx) })
		cancelSession = func(id int64) { pool.CancelSession(id) }
	}

	if withBot {
		att := cfg.Attachments
		svc := master.NewService(master.ServiceConfig{
			Caps:      master.SessionCaps{PerGuild: cfg.HandBack.MaxActiveSessions, PerUser: cfg.Caps.MaxUserSessions},
			MaxQueued: cfg.Caps.MaxQueuedTurns, UserPerMinute: cfg.Caps.UserTurnsPerMinute,
			TrustedBots: cfg.HandBack.TrustedBots, GuildTrustedBots: cfg.GuildTrustedBots, BotPerHour: cfg.HandBack.ReportCap,
			Features: features.For,
		}, st, roles.Roster).WithAttachments(master.AttachmentPolicy{
			CDN: att.CDN(), MaxFile: att.MaxFile, MaxMessage: att.MaxMessage})
		approvals := master.NewApprovals(st, log)
		cmds := master.NewCommands(master.CommandsConfig{
			Model: cfg.MasterModel, WorkerModel: cfg.WorkerModel, MaxRoles: lim.MaxWorkers,
			CancelSession: cancelSession, Catalog: roles.Roster, Budget: budget, Prices: prices,
			Owner: owner, MaxOutput: lim.MaxOutput,
		}, st, masterModel, log)
		limits := master.NewLimits(budget, prices, st).WithConfigTrust(svc.ConfigTrustedBots)
		b, err := bot.New(bot.Config{Token: cfg.DiscordToken, AppID: cfg.DiscordAppID, GuildID: cfg.DiscordGuild, APIURL: cfg.DiscordAPIURL,
			ShardCount: cfg.Sharding.Count, ShardIDs: cfg.Sharding.IDs, Metrics: reg}, svc, cmds, roles, limits, approvals, st, log)
		if err != nil {
			return err
		}
		b.WithPresence(features, master.NewMemoryAdmin(st), st, bot.Avatars{Base: cfg.PublicURL})
		guildName = b.GuildName
		checks["gateway"] = func(context.Context) string {
			_, down := b.GatewayStatus()
			return down
		}
		orch := master.NewOrchestrator(master.OrchestratorConfig{
			Owner: owner, Model: cfg.MasterModel, MaxRounds: lim.MaxRounds, MaxTasks: lim.MaxTasks,
			MaxRoles: lim.MaxWorkers, History: lim.History, Budget: budget, MaxOutput: lim.MaxOutput,
			Lease: lim.TaskLease, Wake: wake(store.WakeMaster), Catalog: roles.Roster,
			Retries: lim.MasterRetries, RetryDelay: lim.MasterRetry, MaxCalls: lim.MaxMasterCalls,
			Dispatch: cfg.HandBack.Dispatch, DispatchDepth: cfg.HandBack.DispatchDepth, ReportCap: cfg.HandBack.ReportCap,
			Channels: b.Channels(), Service: svc, Guilds: b.Channels(), Archive: b.Messenger().Archive, Metrics: reg,
			Vision: att.Vision(cfg.MasterModel), Instructions: cfg.MasterPrompt, Memory: st, Reviews: st,
		}, st, masterModel, log)
		out := b.Messenger()
		disp := master.NewOutbox(master.OutboxConfig{Owner: owner, RetryFor: lim.OutboxRetryFor, Wake: wake(store.WakeOutbox), Metrics: reg, Personas: st}, st, out, log)
		pres := bot.NewPresenter(bot.PresenterConfig{Prices: prices, Wake: wake(store.WakeMaster)}, st, out, log)
		settler := bot.NewSettler(bot.SettlerConfig{Wake: wake(store.WakeApprovals)}, st, out, log)
		g.Go(func() error { return b.Run(ctx) })
		g.Go(func() error { return orch.Run(ctx) })
		g.Go(func() error { return disp.Run(ctx) })
		g.Go(func() error { return pres.Run(ctx) })
		fetch := master.NewFetcher(master.FetcherConfig{Owner: owner, MaxFile: att.MaxFile, Wake: wake(store.WakeFiles)}, st, bot.NewDownloader(att.CDN()), log)
		g.Go(func() error { return fetch.Run(ctx) })
		g.Go(func() error { return settler.Run(ctx) })
		if cfg.Webhook.Enabled() || cfg.API.Enabled() {
			hooks, err := newWebhookSender(cfg, st, wake(store.WakeWebhooks), reg, log)
			if err != nil {
				return err
			}
			g.Go(func() error { return hooks.Run(ctx) })
		}
		if cfg.API.Enabled() {
			inbound := master.NewAPI(master.APIConfig{Service: svc, Channels: b.Channels(), Guilds: b.Channels(),
				Archive: b.Messenger().Archive}, st, log)
			apiHandler = api.New(api.Config{Secret: cfg.API.Secret, Rate: cfg.API.Rate, Metrics: reg}, inbound, log)
		}
	}
	if cfg.HTTPAddr != "" {
		var dash http.Handler
		if cfg.Dashboard.Enabled() {
			d := newDashboard(cfg, st, wake(), prices, guildName, log)
			g.Go(func() error { return d.Run(ctx) })
			dash = d
		}
		h := newOpsHandler(checks, reg.Handler(), apiHandler, dash)
		g.Go(func() error { return serveHTTP(ctx, cfg.HTTPAddr, h, log) })
	}
	err = g.Wait()
	log.Info("callon stopped")
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// modelNeeds are the models a chat calls: the master's and the
// workers' defaults.
func modelNeeds(cfg config.Config) []llm.Need {
	return []llm.Need{{Model: cfg.MasterModel, Setting: "CALLON_MASTER_MODEL"}, {Model: cfg.WorkerModel, Setting: "CALLON_WORKER_MODEL"}}
}

// checkModels is llm.Router.Check of every model the configuration
// names (configuredModels) as findings: callon doctor prints them, the
// bot logs them at start (only warnings there: it serves Discord whatever
// its models do; a chat fails instead, checkChatModels).
func checkModels(ctx context.Context, model *llm.Router, cfg config.Config) []finding {
	ctx, cancel := context.WithTimeout(ctx, modelCheckTimeout)
	defer cancel()
	var out []finding
	for _, f := range model.Check(ctx, configuredModels(cfg)) {
		subject := strings.TrimPrefix(f.Subject, "the ")
		switch {
		case errors.Is(f.Err, llm.ErrNotChecked):
			out = append(out, skip(subject, f.Err.Error()))
		case f.Err != nil:
			out = append(out, fail(subject, f.Err.Error(), ""))
		case f.Note != "":
			out = append(out, warn(subject, f.Note, ""))
		case strings.HasPrefix(subject, "model server "):
			out = append(out, ok(subject, "answers"))
		default:
			out = append(out, ok(subject, "listed by the server"))
		}
	}
	return out
}

// modelCheckTimeout bounds the start-up check of the model servers.
const modelCheckTimeout = 10 * time.Second

// checkChatModels returns an error naming every problem llm.Router.Check
// finds: a chat has nothing to do without its models, so it stops in
// seconds instead of retrying each message for minutes.
func checkChatModels(ctx context.Context, model *llm.Router, cfg config.Config) error {
	ctx, cancel := context.WithTimeout(ctx, modelCheckTimeout)
	defer cancel()
	var problems []string
	for _, f := range model.Check(ctx, modelNeeds(cfg)) {
		if f.Err != nil && !errors.Is(f.Err, llm.ErrNotChecked) {
			problems = append(problems, "  "+f.Err.Error())
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("the team's models are not ready:\n%s", strings.Join(problems, "\n"))
	}
	return nil
}
