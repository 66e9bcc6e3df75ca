package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/internal/demo"
	"github.com/callonbot/callon/internal/proc"
	"github.com/callonbot/callon/llm"
	"github.com/callonbot/callon/llm/llmfake"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/terminal"
	"github.com/callonbot/callon/workers"
)

// chatGuild is the guild id of teams started in a terminal: roles
// configured for a guild never apply to them.
const chatGuild = "terminal"

// chatUser is the person at the terminal: the owner of its teams.
const chatUser = "you"

// chatFlags are callon chat's flags.
type chatFlags struct {
	goal, rolesFile     string
	resume, demo, plain bool
	verbose             bool
	// personas, memory and review override the roles file's features
	// for a new team: "" keeps them.
	personas, memory, review string
}

const chatSummary = `talk to a team in the terminal; needs DATABASE_URL and a model server (OPENAI_*), not Discord.
  callon chat --goal "plan a launch"   a new team
  callon chat --resume                 the team you talked to last
  callon chat --demo                   a team with a scripted model: needs only DATABASE_URL`

func parseChat(args []string, stderr io.Writer) (chatFlags, bool, error) {
	var f chatFlags
	ok, err := parseCommand("chat", chatSummary, args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&f.goal, "goal", "", "what a new team works on")
		fs.BoolVar(&f.resume, "resume", false, "reopen the team you talked to last (one no other chat shows)")
		fs.BoolVar(&f.demo, "demo", false, "a team whose model is a script built into callon: no model server, no key")
		fs.StringVar(&f.rolesFile, "channel-roles", "", "a roles file (as CALLON_ROLES_FILE) whose default roster the team gets")
		fs.BoolVar(&f.verbose, "verbose", false, "show the log in the chat instead of writing it to a file")
		fs.BoolVar(&f.plain, "plain", false, "plain lines even in a terminal (as when the output is not one)")
		fs.StringVar(&f.personas, "personas", "", "on: members post their parts of replies under their own names (default: the roles file's, else off)")
		fs.StringVar(&f.memory, "memory", "", "off: the team keeps no notes for later chats (default: the roles file's, else on)")
		fs.StringVar(&f.review, "review", "", "on: a reviewer checks merged replies; always: every reply (default: the roles file's, else off)")
	})
	var arg *argError
	if errors.As(err, &arg) {
		return f, false, fmt.Errorf("%w: give the goal with --goal, like: callon chat --goal %q", err, arg.arg)
	}
	if !ok {
		return f, false, err
	}
	if err := checkFeatureFlags(f); err != nil {
		return f, false, err
	}
	switch {
	case f.resume && f.goal != "":
		return f, false, errors.New("callon chat takes --goal for a new team or --resume for the last one, not both")
	case f.demo && f.rolesFile != "":
		return f, false, errors.New("callon chat --demo has a team of its own: leave out --channel-roles")
	case f.demo && !f.resume && f.goal == "":
		f.goal = "Show me what a team can do"
	case !f.resume && f.goal == "":
		return f, false, errors.New(`callon chat needs --goal "what the team works on" (or --resume for your last team, or --demo to try callon without a model server)`)
	}
	return f, true, nil
}

// chat runs a team in the terminal: the same master, workers, store and
// roles as the bot, with the terminal as the thread. The process serves
// its own team only (master.ChatScope), whatever else shares the database.
func chat(ctx context.Context, getenv func(string) string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	f, ok, err := parseChat(args, stderr)
	if !ok {
		return err
	}
	if f.rolesFile != "" {
		base := getenv
		getenv = func(k string) string {
			if k == "CALLON_ROLES_FILE" {
				return f.rolesFile
			}
			return base(k)
		}
	}
	cfg := config.Load(getenv)
	need := config.NeedDatabase | config.NeedLLM
	if f.demo {
		need = config.NeedDatabase
	}
	if err := cfg.Validate(need); err != nil {
		return configError(err)
	}
	ui := chooseUI(f, stdin, stdout)
	out := terminal.NewMessenger()
	logPath, logOut, closeLog, err := chatLog(getenv, ui != nil, f.verbose, out, stderr)
	if err != nil {
		return err
	}
	defer closeLog()
	log := newLogger(cfg, logOut)
	// The demo's team, tools and model are its own: it starts none of the
	// roles file's MCP servers and reads none of its rosters.
	var tools master.Toolbox = demo.Toolbox{}
	var roleFile map[master.RoleScope][]master.Role
	var rolePolicy master.RolePolicy
	if f.demo {
		ai, err := startDemo(&cfg, ui != nil, log)
		if err != nil {
			return err
		}
		defer ai.Close()
	} else {
		toolMgr, err := newTools(cfg, log)
		if err != nil {
			return err
		}
		defer closeTools(toolMgr, log)
		tools = toolMgr.Operator()
		if roleFile, rolePolicy, err = rolesConfig(cfg, toolMgr); err != nil {
			return err
		}
	}
	lim := cfg.Limits
	model := modelRouter(cfg, log)
	if err := checkChatModels(ctx, model, cfg); err != nil {
		return err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL, log)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	st.SetMaxAttempts(lim.MaxAttempts)
	roster := func(context.Context, string, string) ([]master.Role, error) { return demo.Roles(), nil }
	if !f.demo {
		roles, err := master.NewRoles(st, roleFile, rolePolicy)
		if err != nil {
			return err
		}
		roster = roles.Roster
	}
	owner := proc.NewOwner()
	listener := st.NewListener()
	live := st.NewLiveness(owner)
	wake := func(kinds ...store.Kinds) <-chan string {
		ch, _ := listener.Subscribe(kinds...)
		return ch
	}
	// A chat serves the terminal teams attached to it, nothing else: the
	// database may be a bot's, or another chat's.
	scope := master.ChatScope(owner)
	budget := master.Budget{SessionTokens: lim.SessionTokens, GuildDailyTokens: cfg.Caps.GuildDailyTokens}
	features := master.NewFeatureConfig(st, fileFeatures(cfg.Features))
	svc := master.NewService(master.ServiceConfig{MaxQueued: cfg.Caps.MaxQueuedTurns, Features: chatFeatures(f, features)}, st, roster)
	pool := workers.New(workers.Config{ID: owner, Scope: scope, Slots: max(lim.WorkerSlots, 1), Lease: lim.TaskLease, Heartbeat: lim.Heartbeat(),
		SweepEvery: lim.SweepInterval, TaskTimeout: lim.TaskTimeout, WorkerModel: cfg.WorkerModel, Budget: budget, Wake: wake(store.WakeTasks),
		MaxOutput: lim.MaxOutput, Tools: tools, ApprovalTimeout: cfg.Tools.ApprovalTimeout, Ask: render.Ask}, st, model, log)
	cmds := master.NewCommands(master.CommandsConfig{Model: cfg.MasterModel, WorkerModel: cfg.WorkerModel, MaxRoles: lim.MaxWorkers,
		CancelSession: func(id int64) { pool.CancelSession(id) }, Catalog: roster, Budget: budget,
		Owner: owner, MaxOutput: lim.MaxOutput}, st, model, log)
	orch := master.NewOrchestrator(master.OrchestratorConfig{
		Owner: owner, Scope: scope, Model: cfg.MasterModel, MaxRounds: lim.MaxRounds, MaxTasks: lim.MaxTasks, MaxRoles: lim.MaxWorkers,
		History: lim.History, Budget: budget, MaxOutput: lim.MaxOutput, Lease: lim.TaskLease, Wake: wake(store.WakeMaster), Catalog: roster,
		Retries: lim.MasterRetries, RetryDelay: lim.MasterRetry, MaxCalls: lim.MaxMasterCalls, Instructions: cfg.MasterPrompt,
		Memory: st, Reviews: st,
	}, st, model, log)
	sender := master.NewOutbox(master.OutboxConfig{Owner: owner, Scope: scope, RetryFor: lim.OutboxRetryFor, Wake: wake(store.WakeOutbox), Poll: 200 * time.Millisecond}, st, out, log)
	pres := bot.NewPresenter(bot.PresenterConfig{Tick: 500 * time.Millisecond, Scope: scope}, st, out, log)
	settler := bot.NewSettler(bot.SettlerConfig{Poll: 500 * time.Millisecond, Scope: scope}, st, out, log)
	approvals := master.NewApprovals(st, log)

	loops, lctx := errgroup.WithContext(ctx)
	lctx, stopLoops := context.WithCancel(lctx)
	defer stopLoops()
	loops.Go(func() error { return live.Run(lctx) })
	// The team is attached to this process once it is registered live, so
	// that no other chat can take it while this one shows it.
	select {
	case <-live.Ready():
	case <-lctx.Done():
		stopLoops()
		return cmp.Or(loops.Wait(), ctx.Err())
	}
	sess, recent, pending, err := openTeam(ctx, f, st, svc, owner)
	if err != nil {
		stopLoops()
		_ = loops.Wait()
		return err
	}
	for _, run := range []func(context.Context) error{listener.Run, pool.Run, orch.Run, sender.Run, pres.Run, settler.Run} {
		loops.Go(func() error { return run(lctx) })
	}
	team := &chatTeam{sess: sess, svc: svc, cmds: cmds, approvals: approvals, memory: master.NewMemoryAdmin(st)}
	opt := terminal.Options{Intro: banner(f, sess, logPath), Recent: recent, Pending: pending, Words: terminal.Words{Names: chatNames, Channels: chatChannels}}
	var outcome terminal.Outcome
	if ui != nil {
		outcome, err = ui.run(lctx, team, out, opt)
	} else {
		outcome, err = terminal.RunLines(lctx, stdin, stdout, team, out, opt)
	}
	stopLoops()
	if lerr := loops.Wait(); lerr != nil && !errors.Is(lerr, context.Canceled) && err == nil {
		err = lerr
	}
	// A team left running waits for the next `callon chat --resume`.
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if derr := st.DetachSession(dctx, sess.ID, owner); derr != nil {
		log.Warn("detach the team", "session_id", sess.ID, "err", derr)
	}
	if err == nil && outcome == terminal.Left {
		resume := "callon chat --resume"
		if f.demo {
			resume = "callon chat --demo --resume"
		}
		fmt.Fprintf(stdout, "The team is still there: %s reopens it (team #%d).\n", resume, sess.ID)
	}
	return err
}

// openTeam starts the chat's team, or with --resume attaches the last
// one, and returns it with its last exchanges and the requests waiting
// for a decision (their messages were shown by the chat that left it).
func openTeam(ctx context.Context, f chatFlags, st *store.Store, svc *master.Service, owner string) (master.Session, []master.Exchange, []master.Approval, error) {
	if !f.resume {
		thread := "chat-" + rand.Text()[:10]
		sess, _, err := svc.StartSession(ctx, master.NewSession{GuildID: chatGuild, ChannelID: chatGuild, ThreadID: thread, OwnerID: chatUser,
			Goal: f.goal, Surface: master.SurfaceTerminal, AttachedTo: owner})
		if err != nil {
			return sess, nil, nil, fmt.Errorf("start the team: %s", master.ErrorMessage(err))
		}
		return sess, nil, nil, nil
	}
	sess, err := st.ResumeSession(ctx, owner)
	if errors.Is(err, master.ErrNotFound) {
		return sess, nil, nil, errors.New(`there is no team to resume (or every one is open in another chat): start one with callon chat --goal "…"`)
	}
	if err != nil {
		return sess, nil, nil, err
	}
	recent, err := st.LastExchanges(ctx, sess.ID, 3)
	if err != nil {
		return sess, nil, nil, err
	}
	pending, err := st.PendingApprovals(ctx, sess.ID)
	return sess, recent, pending, err
}

// banner is what a chat says first: its team, and where its log goes.
func banner(f chatFlags, sess master.Session, logPath string) []string {
	verb := "New team"
	if f.resume {
		verb = "Resumed team"
	}
	lines := []string{fmt.Sprintf("callon chat · %s #%d · %s", verb, sess.ID, sess.Goal)}
	if f.demo {
		lines = append(lines, "DEMO: a script built into callon plays the team's model. No AI is called; the answers are canned.")
	}
	if !sess.DormantSince.IsZero() {
		lines = append(lines, fmt.Sprintf("The team has been dormant since %s: your next message wakes it.", sess.DormantSince.Local().Format("2 Jan 15:04")))
	}
	if logPath != "" {
		lines = append(lines, "Log: "+logPath)
	}
	return lines
}

// chatChannels names the channel of terminal teams (their notes', say).
func chatChannels(id string) string {
	if id == chatGuild {
		return "the terminal"
	}
	return ""
}

// chatNames names the people a terminal team mentions.
func chatNames(id string) string {
	if id == chatUser {
		return "you"
	}
	return ""
}

// startDemo starts the demo's scripted model and points cfg at it.
func startDemo(cfg *config.Config, paced bool, log *slog.Logger) (*llmfake.Server, error) {
	var pace time.Duration
	if paced {
		pace = 700 * time.Millisecond // so the status block has something to show
	}
	ai, err := llmfake.Start(demo.Script(pace), llmfake.WithModels(demo.Model), llmfake.WithoutRecords(),
		llmfake.OnUnexpected(func(msg string) { log.Warn("demo model", "problem", msg) }))
	if err != nil {
		return nil, err
	}
	cfg.OpenAIBaseURL, cfg.OpenAIKey = ai.URL(), ai.APIKey()
	cfg.MasterModel, cfg.WorkerModel = demo.Model, demo.Model
	cfg.Providers = nil
	return ai, nil
}

// chatTeam is terminal.Team with the core's services, for one team.
type chatTeam struct {
	sess      master.Session
	svc       *master.Service
	cmds      *master.Commands
	approvals *master.Approvals
	memory    *master.MemoryAdmin
}

var _ terminal.Team = (*chatTeam)(nil)

// me is the person at the terminal: the team's owner.
func me() master.Actor { return master.Actor{UserID: chatUser} }

func (t *chatTeam) Say(ctx context.Context, text string) error {
	// Unique across chats and processes: turns are keyed by message id.
	id := fmt.Sprintf("chat:%d:%d", t.sess.ID, time.Now().UnixNano())
	turn, err := t.svc.HandleMessage(ctx, master.Incoming{ID: id, GuildID: chatGuild, ChannelID: t.sess.ThreadID, AuthorID: chatUser, Content: text})
	if err == nil && turn.State == master.TurnRefused {
		return terminal.ErrNotTaken
	}
	return err
}

func (t *chatTeam) Show(ctx context.Context) (master.TeamView, error) {
	return t.cmds.Team(ctx, t.sess.ThreadID)
}

func (t *chatTeam) Replan(ctx context.Context, change string) error {
	_, err := t.cmds.Replan(ctx, t.sess, me(), change)
	return err
}

func (t *chatTeam) Dissolve(ctx context.Context) error { return t.cmds.Dissolve(ctx, t.sess, me()) }

func (t *chatTeam) Decide(ctx context.Context, id int64, approve bool) (master.Approval, error) {
	return t.approvals.DecideIn(ctx, t.sess.ID, id, approve, me())
}

// providerConfigs is the named providers in llm's terms.
func providerConfigs(cfg config.Config) map[string]llm.Config {
	out := map[string]llm.Config{}
	for _, p := range cfg.Providers {
		out[p.Name] = llm.Config{BaseURL: p.BaseURL, APIKey: p.APIKey, Headers: p.Headers, ToolDialect: p.ToolDialect}
	}
	return out
}

// Memory is /memory in a chat: the notes of the chats' channel, which the
// person at the terminal (the operator) administers.
func (t *chatTeam) Memory(ctx context.Context, arg string) (string, error) {
	admin := master.Actor{UserID: chatUser, Permissions: master.PermAdministrator}
	verb, rest, _ := strings.Cut(strings.TrimSpace(arg), " ")
	switch verb {
	case "", "show":
		notes, err := t.memory.Show(ctx, admin, chatGuild, chatGuild)
		if err != nil {
			return "", err
		}
		return render.Notes(chatGuild, notes), nil
	case "forget":
		id, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		if err != nil || id <= 0 {
			return "", master.Errorf(master.EInvalid, "give the note's number, like /memory forget 3")
		}
		if err := t.memory.Forget(ctx, admin, chatGuild, chatGuild, id); err != nil {
			return "", err
		}
		return fmt.Sprintf("Note %d forgotten: no team sees it again.", id), nil
	case "clear":
		n, err := t.memory.Clear(ctx, admin, chatGuild, chatGuild)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Removed %d notes.", n), nil
	}
	return "", master.Errorf(master.EInvalid, "use /memory, /memory forget N or /memory clear")
}

// checkFeatureFlags refuses a feature flag with a value it does not take.
func checkFeatureFlags(f chatFlags) error {
	for _, c := range []struct{ name, v string }{{"personas", f.personas}, {"memory", f.memory}} {
		if c.v != "" && c.v != "on" && c.v != "off" {
			return fmt.Errorf("--%s takes on or off, not %q", c.name, c.v)
		}
	}
	if _, ok := master.ParseReviewMode(f.review); f.review != "" && !ok {
		return fmt.Errorf("--review takes on, off or always, not %q", f.review)
	}
	return nil
}

// chatFeatures is a chat's team's features: the roles file's, with the
// flags over them.
func chatFeatures(f chatFlags, fc *master.FeatureConfig) func(ctx context.Context, guildID, channelID string) (master.Features, error) {
	return func(ctx context.Context, guildID, channelID string) (master.Features, error) {
		out, err := fc.For(ctx, guildID, channelID)
		if err != nil {
			return out, err
		}
		if f.demo {
			out = master.DefaultFeatures() // the demo's script knows no features
		}
		if f.personas != "" {
			out.Personas = f.personas == "on"
		}
		if f.memory != "" {
			out.Memory = f.memory == "on"
		}
		if m, ok := master.ParseReviewMode(f.review); ok {
			out.Review = m
		}
		return out, nil
	}
}
