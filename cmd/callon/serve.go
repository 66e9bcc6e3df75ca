package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/llm"
	"github.com/callonbot/callon/master"
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
// master, the outbox and the status messages, until ctx ends.
func serve(ctx context.Context, cfg config.Config, log *slog.Logger, withBot bool) error {
	if cfg.Limits.WorkerSlots == 0 && !withBot {
		return errors.New("CALLON_WORKER_SLOTS is 0: a worker process needs at least one slot")
	}
	toolMgr, err := newTools(cfg, log)
	if err != nil {
		return err
	}
	defer closeTools(toolMgr, log)
	roleFile, rolePolicy, err := rolesConfig(cfg, catalog{m: toolMgr, servers: cfg.MCPServers})
	if err != nil {
		return err
	}
	log.Info("starting callon", "version", version, "config", cfg)
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, log)
	if err != nil {
		return err
	}
	defer st.Close()
	roles, err := master.NewRoles(st, roleFile, rolePolicy)
	if err != nil {
		return err
	}
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	if cfg.Webhook.Enabled() {
		st.EnableWebhooks(true) // before anything that changes state runs
	}
	st.SetMaxAttempts(cfg.Limits.MaxAttempts)
	owner := master.NewOwner()
	lim := cfg.Limits
	model := llm.NewRouter(llm.Config{BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIKey, MaxConcurrent: lim.LLMConcurrency,
		MaxRetries: cmp.Or(lim.LLMRetries, -1)}, providerConfigs(cfg), log) // llm reads 0 as its default and a negative as none
	listener := st.NewListener()
	live := st.NewLiveness(owner)

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return listener.Run(ctx) })
	g.Go(func() error { return live.Run(ctx) })
	g.Go(func() error { checkModels(ctx, model, cfg, log); return nil })
	wake := func() <-chan string {
		ch, _ := listener.Subscribe()
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
			Wake:        wake(),
			Tools:       toolbox{m: toolMgr, log: log},

			ApprovalTimeout: cfg.Tools.ApprovalTimeout,
		}, st, model, log)
		g.Go(func() error { return pool.Run(ctx) })
		cancelSession = func(id int64) { pool.CancelSession(id) }
	}

	if withBot {
		svc := master.NewService(st, roles.Roster)
		approvals := master.NewApprovals(st, log)
		cmds := master.NewCommands(master.CommandsConfig{
			Model: cfg.MasterModel, WorkerModel: cfg.WorkerModel, MaxRoles: lim.MaxWorkers,
			CancelSession: cancelSession, Catalog: roles.Roster,
		}, st, model, log)
		b, err := bot.New(bot.Config{Token: cfg.DiscordToken, AppID: cfg.DiscordAppID, GuildID: cfg.DiscordGuild, APIURL: cfg.DiscordAPIURL},
			svc, cmds, roles, approvals, st, log)
		if err != nil {
			return err
		}
		orch := master.NewOrchestrator(master.OrchestratorConfig{
			Owner: owner, Model: cfg.MasterModel, MaxRounds: lim.MaxRounds, MaxTasks: lim.MaxTasks,
			MaxRoles: lim.MaxWorkers, History: lim.History, SessionTokens: lim.SessionTokens,
			Lease: lim.TaskLease, Wake: wake(), Catalog: roles.Roster,
			Retries: lim.MasterRetries, RetryDelay: lim.MasterRetry, MaxCalls: lim.MaxMasterCalls,
			Dispatch: cfg.HandBack.Dispatch, DispatchDepth: cfg.HandBack.DispatchDepth,
			MaxActiveSessions: cfg.HandBack.MaxActiveSessions, ReportCap: cfg.HandBack.ReportCap,
			Channels: b.Channels(), Service: svc,
		}, st, model, log)
		out := b.Messenger()
		disp := master.NewOutbox(master.OutboxConfig{Owner: owner, RetryFor: lim.OutboxRetryFor, Wake: wake()}, st, out, log)
		pres := master.NewPresenter(master.PresenterConfig{}, st, out, log)
		settler := master.NewSettler(master.SettlerConfig{}, st, out, log)
		g.Go(func() error { return b.Run(ctx) })
		g.Go(func() error { return orch.Run(ctx) })
		g.Go(func() error { return disp.Run(ctx) })
		g.Go(func() error { return pres.Run(ctx) })
		g.Go(func() error { return settler.Run(ctx) })
		if cfg.Webhook.Enabled() {
			hooks := newWebhookSender(cfg.Webhook, st, wake(), log)
			g.Go(func() error { return hooks.Run(ctx) })
		}
	}
	if cfg.HTTPAddr != "" {
		g.Go(func() error { return serveHealth(ctx, cfg.HTTPAddr, st, log) })
	}
	err = g.Wait()
	log.Info("callon stopped")
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// checkModels warns when a model's provider does not list the master's
// or the workers' model. Only a warning: some servers list nothing.
func checkModels(ctx context.Context, model *llm.Router, cfg config.Config, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, m := range []struct{ name, v, model string }{
		{"master", "CALLON_MASTER_MODEL", cfg.MasterModel}, {"worker", "CALLON_WORKER_MODEL", cfg.WorkerModel},
	} {
		has, known, err := model.HasModel(ctx, m.model)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("could not list the LLM server's models; is its base URL right?", "model", m.model, "err", err)
		case known && !has:
			log.Warn("the LLM server does not list the "+m.name+" model: calls to it will fail", "model", m.model, "variable", m.v)
		}
	}
}

// serveHealth answers GET /healthz: 200 when Postgres answers.
func serveHealth(ctx context.Context, addr string, st *store.Store, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		pctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := st.Ping(pctx); err != nil {
			http.Error(w, "unhealthy: database unreachable", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("health endpoint listening", "addr", addr)
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("health endpoint: %w", err)
	}
	return nil
}
