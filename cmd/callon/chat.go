package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/llm"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/workers"
)

// chatGuild is the guild id of teams started in a terminal: roles
// configured for a guild never apply to them.
const chatGuild = "terminal"

// chat runs a team in the terminal: the same master, workers, store and
// roles as the bot, with stdin and stdout as the thread. Each line is a
// message (the next is read once the team answered), lines starting
// with / are commands, and the team's status is printed as it changes.
func chat(ctx context.Context, getenv func(string) string, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var goal, rolesFile *string
	ok, err := parseCommand("chat", "talk to a team in the terminal; needs DATABASE_URL and an LLM (OPENAI_*), not Discord",
		args, stderr, func(fs *flag.FlagSet) {
			goal = fs.String("goal", "", "what the team works on (required)")
			rolesFile = fs.String("channel-roles", "", "a roles file (as CALLON_ROLES_FILE) whose default roster the team gets")
		})
	if !ok {
		return err
	}
	if *goal == "" {
		return errors.New(`callon chat needs --goal "what the team works on"`)
	}
	if *rolesFile != "" {
		base := getenv
		getenv = func(k string) string {
			if k == "CALLON_ROLES_FILE" {
				return *rolesFile
			}
			return base(k)
		}
	}
	cfg := config.Load(getenv)
	if err := cfg.Validate(config.NeedDatabase | config.NeedLLM); err != nil {
		return configError(err)
	}
	log := newLogger(cfg, stderr)
	toolMgr, err := newTools(cfg, log)
	if err != nil {
		return err
	}
	defer closeTools(toolMgr, log)
	roleFile, rolePolicy, err := rolesConfig(cfg, catalog{m: toolMgr, servers: cfg.MCPServers})
	if err != nil {
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
	st.SetMaxAttempts(cfg.Limits.MaxAttempts)
	roles, err := master.NewRoles(st, roleFile, rolePolicy)
	if err != nil {
		return err
	}
	lim := cfg.Limits
	owner := master.NewOwner()
	model := modelRouter(cfg, log)
	listener := st.NewListener()
	live := st.NewLiveness(owner)
	wake := func(kinds store.Kinds) <-chan string {
		ch, _ := listener.Subscribe(kinds)
		return ch
	}
	term := &terminal{w: stdout, changed: make(chan struct{})}
	budget := master.Budget{SessionTokens: lim.SessionTokens, GuildDailyTokens: cfg.Caps.GuildDailyTokens}
	svc := master.NewService(master.ServiceConfig{MaxQueued: cfg.Caps.MaxQueuedTurns}, st, roles.Roster)
	pool := workers.New(workers.Config{ID: owner, Slots: max(lim.WorkerSlots, 1), Lease: lim.TaskLease, Heartbeat: lim.Heartbeat(),
		SweepEvery: lim.SweepInterval, TaskTimeout: lim.TaskTimeout, WorkerModel: cfg.WorkerModel, Budget: budget, Wake: wake(store.WakeTasks),
		Tools: toolbox{m: toolMgr, log: log}, ApprovalTimeout: cfg.Tools.ApprovalTimeout}, st, model, log)
	cmds := master.NewCommands(master.CommandsConfig{Model: cfg.MasterModel, WorkerModel: cfg.WorkerModel, MaxRoles: lim.MaxWorkers,
		CancelSession: func(id int64) { pool.CancelSession(id) }, Catalog: roles.Roster, Budget: budget}, st, model, log)
	orch := master.NewOrchestrator(master.OrchestratorConfig{
		Owner: owner, Model: cfg.MasterModel, MaxRounds: lim.MaxRounds, MaxTasks: lim.MaxTasks, MaxRoles: lim.MaxWorkers,
		History: lim.History, Budget: budget, Lease: lim.TaskLease, Wake: wake(store.WakeMaster), Catalog: roles.Roster,
		Retries: lim.MasterRetries, RetryDelay: lim.MasterRetry, MaxCalls: lim.MaxMasterCalls, Instructions: cfg.MasterPrompt,
	}, st, model, log)
	out := master.NewOutbox(master.OutboxConfig{Owner: owner, RetryFor: lim.OutboxRetryFor, Wake: wake(store.WakeOutbox), Poll: 200 * time.Millisecond}, st, term, log)
	pres := master.NewPresenter(master.PresenterConfig{Tick: 500 * time.Millisecond}, st, term, log)
	settler := master.NewSettler(master.SettlerConfig{Poll: 500 * time.Millisecond}, st, term, log)
	approvals := master.NewApprovals(st, log)

	thread := "chat-" + rand.Text()[:10]
	sess, _, err := svc.StartSession(ctx, master.NewSession{GuildID: chatGuild, ChannelID: chatGuild, ThreadID: thread, OwnerID: "you", Goal: *goal})
	if err != nil {
		return fmt.Errorf("start the team: %s", master.ErrorMessage(err))
	}

	loops, lctx := errgroup.WithContext(ctx)
	lctx, stopLoops := context.WithCancel(lctx)
	for _, run := range []func(context.Context) error{listener.Run, live.Run, pool.Run, orch.Run, out.Run, pres.Run, settler.Run} {
		loops.Go(func() error { return run(lctx) })
	}
	err = converse(lctx, stdin, term, svc, cmds, approvals, sess)
	stopLoops()
	if lerr := loops.Wait(); lerr != nil && !errors.Is(lerr, context.Canceled) && err == nil {
		err = lerr
	}
	return err
}

// answered are the kinds of message a chat waits for after a message:
// the team's answer, or a request to approve a call of a tool.
var answered = []master.OutKind{master.OutReply, master.OutQuestion, master.OutApproval}

// converse reads the user's lines until EOF or /dissolve; after each
// message it waits for the team's answer (a reply, or a question), or
// for a request to approve a call, which /approve N or /deny N decides.
func converse(ctx context.Context, stdin io.Reader, term *terminal, svc *master.Service, cmds *master.Commands, approvals *master.Approvals, sess master.Session) error {
	term.say("Type a message for the team; /team shows it, /replan [what to change] reorganizes it, /dissolve ends it.")
	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	me := master.Actor{UserID: "you", Permissions: master.PermAdministrator}
	seq := master.Snowflake(time.Now())
	for in.Scan() {
		line := strings.TrimSpace(in.Text())
		switch {
		case line == "":
			continue
		case line == "/team":
			e, err := cmds.Team(ctx, sess.ThreadID)
			if err != nil {
				term.say(master.ErrorMessage(err))
				continue
			}
			term.say(teamText(e))
		case line == "/replan" || strings.HasPrefix(line, "/replan "):
			change, err := cmds.Replan(ctx, sess, me, strings.TrimSpace(strings.TrimPrefix(line, "/replan")))
			if err != nil {
				term.say(master.ErrorMessage(err))
				continue
			}
			term.say("Done. " + change)
		case line == "/dissolve":
			seen := term.seen()
			if err := cmds.Dissolve(ctx, sess, me); err != nil {
				term.say(master.ErrorMessage(err))
				continue
			}
			return term.waitFor(ctx, seen, master.OutSummary)
		case strings.HasPrefix(line, "/approve ") || strings.HasPrefix(line, "/deny "):
			verb, arg, _ := strings.Cut(line, " ")
			id, err := strconv.ParseInt(strings.TrimSpace(arg), 10, 64)
			if err != nil {
				term.say("Give the number of the request: " + verb + " 12")
				continue
			}
			seen := term.seen()
			a, err := approvals.Decide(ctx, id, verb == "/approve", me)
			if err != nil {
				term.say(master.ErrorMessage(err))
				continue
			}
			term.say(master.ApprovalText(a))
			if err := term.waitFor(ctx, seen, answered...); err != nil {
				return err
			}
		case strings.HasPrefix(line, "/"):
			term.say("Commands: /team, /replan [what to change], /approve N, /deny N, /dissolve. Anything else is a message for the team.")
		default:
			seq++
			seen := term.seen()
			if _, err := svc.HandleMessage(ctx, master.Incoming{ID: strconv.FormatInt(seq, 10), GuildID: chatGuild,
				ChannelID: sess.ThreadID, AuthorID: "you", Content: line}); err != nil {
				return fmt.Errorf("record the message: %w", err)
			}
			if err := term.waitFor(ctx, seen, answered...); err != nil {
				return err
			}
		}
	}
	return in.Err()
}

// terminal is the Messenger of a chat: it prints what the team posts,
// status lines indented, and lets converse wait for an answer.
type terminal struct {
	w io.Writer

	mu      sync.Mutex
	posted  []master.OutKind // the kind of every message printed, in order
	changed chan struct{}    // closed and replaced at every message
}

var _ master.Messenger = (*terminal)(nil)

func (t *terminal) say(text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintln(t.w, text)
}

// seen is how many messages the team has posted so far.
func (t *terminal) seen() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.posted)
}

// waitFor waits until a message of one of kinds is posted after the
// first seen ones.
func (t *terminal) waitFor(ctx context.Context, seen int, kinds ...master.OutKind) error {
	for {
		t.mu.Lock()
		for _, k := range t.posted[seen:] {
			if slices.Contains(kinds, k) {
				t.mu.Unlock()
				return nil
			}
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Send prints a message of the team.
func (t *terminal) Send(_ context.Context, m master.OutMessage) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	prefix := "team › "
	if m.Kind == master.OutNotice && m.TurnID != 0 { // a status message
		prefix = "  "
	}
	fmt.Fprintln(t.w, prefix+m.Content)
	for _, b := range m.Buttons {
		if id, ok := strings.CutPrefix(b.CustomID, master.ApprovePrefix); ok {
			fmt.Fprintf(t.w, "        (answer /approve %s or /deny %s)\n", id, id)
		}
	}
	t.posted = append(t.posted, m.Kind)
	close(t.changed)
	t.changed = make(chan struct{})
	return "m" + strconv.FormatInt(m.ID, 10) + "-" + m.Nonce, nil
}

// Edit prints a status message's new text.
func (t *terminal) Edit(_ context.Context, _, _, content string) error {
	t.say("  " + content)
	return nil
}

// Find finds nothing: a terminal prints each message once.
func (t *terminal) Find(context.Context, master.OutMessage) (string, error) { return "", nil }

// Typing shows nothing: the status lines say the team is at work.
func (t *terminal) Typing(context.Context, string) error { return nil }

// Archive has nothing to archive.
func (t *terminal) Archive(context.Context, string) error { return nil }

// teamText renders /team's embed for a terminal.
func teamText(e master.Embed) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\n", e.Title, e.Description)
	for _, f := range e.Fields {
		fmt.Fprintf(&b, "\n%s\n%s\n", f.Name, f.Value)
	}
	if e.Footer != "" {
		fmt.Fprintf(&b, "\n%s\n", e.Footer)
	}
	return strings.TrimSpace(b.String())
}

// providerConfigs is the named providers in llm's terms.
func providerConfigs(cfg config.Config) map[string]llm.Config {
	out := map[string]llm.Config{}
	for _, p := range cfg.Providers {
		out[p.Name] = llm.Config{BaseURL: p.BaseURL, APIKey: p.APIKey, Headers: p.Headers, ToolDialect: p.ToolDialect}
	}
	return out
}
