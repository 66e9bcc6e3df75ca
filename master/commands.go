package master

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// CommandStore is what /team, /replan and /dissolve need from Postgres.
type CommandStore interface {
	SessionFinder
	RosterReader
	// TeamView reads the session's roster, current turn with its tasks
	// and progress, and its latest signals.
	TeamView(ctx context.Context, sessionID int64, signals int) (TeamView, error)
	// ReplanSession replaces an active session's roster (queued tasks of
	// removed roles are cancelled) and posts notice in its thread, in one
	// transaction. It returns the names removed.
	ReplanSession(ctx context.Context, sessionID int64, roster []Role, notice string) ([]string, error)
	// SessionStats counts what a session did.
	SessionStats(ctx context.Context, sessionID int64) (SessionStats, error)
	// Dissolve ends an active session: open tasks and turns are cancelled,
	// the reports it never took up are posted in its thread (cut into
	// messages by split), summary is queued for its thread (which is
	// archived once it is posted), and final, when set, is delivered to
	// its report_to. ErrNotFound when the session is not active any more.
	Dissolve(ctx context.Context, sessionID int64, summary string, final *NewReport, split func(string) []string) error
	// HandBack tells how many reports a session sent, and its last answer.
	HandBack(ctx context.Context, sessionID int64) (sent int, lastAnswer string, err error)
	// SpendStore holds each /replan call's worst case and settles it
	// (see Meter).
	SpendStore
}

// SessionStats is what a team did, for its closing summary.
type SessionStats struct {
	Turns     int            // user messages handled
	TasksDone map[string]int // finished subtasks by role
	Tasks     int            // subtasks in all
	Usage     Usage          // tokens used, as the session's row has them now
}

// CommandsConfig configures the commands.
type CommandsConfig struct {
	Model       string // for /replan
	WorkerModel string // shown for roles without a model of their own
	MaxRoles    int
	// Catalog, when set, gives the roles configured for a channel: a role
	// /replan adds under one of those names takes its prompt and model.
	Catalog CatalogFunc
	// CancelSession stops this process's workers on a session at once;
	// other processes learn it from the wake-up the store sends.
	CancelSession func(sessionID int64)
	Now           func() time.Time
	// Budget is the deployment's token budgets: /replan calls no model
	// for a team past one. Prices price what /team shows.
	Budget Budget
	Prices Prices
	// Owner is this process, named on the holds of /replan's calls;
	// MaxOutput their max_tokens (see OrchestratorConfig).
	Owner     string
	MaxOutput int
}

// Commands implements /team, /replan and /dissolve.
type Commands struct {
	cfg   CommandsConfig
	store CommandStore
	meter Meter
	log   *slog.Logger
}

// NewCommands returns the commands.

// ArchivedNote ends a dissolved team's summary in Discord (the terminal
// says how to start another there instead).
const ArchivedNote = "This thread is archived; start a new team with `/callon`."

func NewCommands(cfg CommandsConfig, store CommandStore, llm LLM, logger *slog.Logger) *Commands {
	cfg.MaxRoles = cmp.Or(cfg.MaxRoles, 8)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.CancelSession == nil {
		cfg.CancelSession = func(int64) {}
	}
	log := logger.With("component", "commands")
	return &Commands{cfg: cfg, store: store, meter: Meter{Store: store, LLM: llm, MaxOutput: cfg.MaxOutput, Log: log}, log: log}
}

// Actor is the member who runs a command.
type Actor struct {
	UserID      string
	Permissions int64
	Bot         bool     // a bot: it may run no admin action
	Roles       []string // the member's role ids, where a decision needs them
}

// MayManage reports whether a may reorganize or end s: its owner, or a
// member who may manage threads; never a bot, even one that owns s.
func (a Actor) MayManage(s Session) bool {
	return !a.Bot && (a.UserID == s.OwnerID || a.Permissions&(PermManageThreads|PermAdministrator) != 0)
}

// noTeam wraps ErrNotFound in what a person reads.
func noTeam(err error) error {
	if errors.Is(err, ErrNotFound) {
		return &Error{Code: ENotFound, Message: NoTeamHere, Err: err}
	}
	return err
}

// Session returns the active session of a thread; an *Error wrapping
// ErrNotFound when there is none.
func (c *Commands) Session(ctx context.Context, threadID string) (Session, error) {
	s, err := c.store.ActiveSession(ctx, threadID)
	return s, noTeam(err)
}

// Team is what /team shows of a thread's active session.
func (c *Commands) Team(ctx context.Context, threadID string) (TeamView, error) {
	s, err := c.Session(ctx, threadID)
	if err != nil {
		return TeamView{}, err
	}
	v, err := c.store.TeamView(ctx, s.ID, 6)
	if err != nil {
		return TeamView{}, err
	}
	v.Now = c.cfg.Now()
	v.Budget = effective(v.Spend.Budget, c.cfg.Budget.SessionTokens)
	v.Cost = c.cfg.Prices.Cost(v.Spend.ByModel)
	v.WorkerModel = c.cfg.WorkerModel
	return v, nil
}

// Replan asks the model to reorganize the team, applies it, and returns
// what changed, for the member who asked. ErrNotAllowed when a may not.
func (c *Commands) Replan(ctx context.Context, s Session, a Actor, instruction string) (string, error) {
	if !a.MayManage(s) {
		return "", &Error{Code: ENotAllowed, Err: ErrNotAllowed,
			Message: "Only the person who started this team, or members who can manage threads, can reorganize it."}
	}
	old, err := c.store.Roster(ctx, s.ID)
	if err != nil {
		return "", err
	}
	msgs := replanMessages(s, old, strings.TrimSpace(instruction), c.cfg.MaxRoles)
	env := decisionEnv{roster: old, maxTasks: 1, maxRoles: c.cfg.MaxRoles}
	tools := []Tool{replanMasterTool.schema(env)}
	var d decision
	for attempt := 0; ; attempt++ {
		h := Hold{SessionID: s.ID, Owner: c.cfg.Owner, Budget: c.cfg.Budget}
		resp, held, err := c.meter.Chat(ctx, h, ChatRequest{Model: c.cfg.Model, Messages: msgs, Tools: tools, ToolChoice: "required"})
		switch {
		case errors.Is(err, ErrBudget):
			return "", &Error{Code: ELimit, Message: BudgetText(err), Err: err}
		case err != nil && held.ID == 0:
			return "", err
		case err != nil:
			return "", fmt.Errorf("replan model call: %w", err)
		}
		var perr error
		if len(resp.ToolCalls) == 0 || resp.ToolCalls[0].Name != ToolReplan {
			perr = errors.New("call the replan tool with the whole new roster")
		} else if d, perr = parseDecision(resp.ToolCalls[0], env); perr == nil {
			break
		}
		if attempt == 1 {
			return "", fmt.Errorf("the model gave no usable roster: %w", perr)
		}
		msgs = append(msgs, Message{Role: RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
		for _, tc := range resp.ToolCalls {
			msgs = append(msgs, Message{Role: RoleTool, ToolCallID: tc.ID, Content: "Error: " + perr.Error()})
		}
		if len(resp.ToolCalls) == 0 {
			msgs = append(msgs, Message{Role: RoleUser, Content: "Error: " + perr.Error()})
		}
	}
	roster, err := rosterAfter(ctx, c.cfg.Catalog, s, old, d.roles)
	if err != nil {
		return "", err
	}
	change := describeReplan(old, roster, d.reason)
	notice := Truncate(fmt.Sprintf("🔁 **Team reorganized** by <@%s>\n%s", a.UserID, change), MaxMessageLen)
	if _, err := c.store.ReplanSession(ctx, s.ID, roster, notice); err != nil {
		return "", noTeam(err)
	}
	c.log.Info("team replanned", "session_id", s.ID, "roles", RoleNames(roster), "by", a.UserID)
	return change, nil
}

// Dissolve ends the session: running workers stop, open work is
// cancelled, a closing summary is posted and the thread archived.
// ErrNotAllowed when a may not.
func (c *Commands) Dissolve(ctx context.Context, s Session, a Actor) error {
	if !a.MayManage(s) {
		return &Error{Code: ENotAllowed, Err: ErrNotAllowed,
			Message: "Only the person who started this team, or members who can manage threads, can dissolve it."}
	}
	stats, err := c.store.SessionStats(ctx, s.ID)
	if err != nil {
		return err
	}
	var final *NewReport
	if s.ReportTo != "" || s.CallbackURL != "" {
		sent, last, err := c.store.HandBack(ctx, s.ID)
		if err != nil {
			return err
		}
		if sent == 0 { // the requester hears once, at least
			summary := Truncate(cmp.Or(strings.TrimSpace(last), "The team was dissolved before it had an answer."), 1500)
			posted, turn := ReportTexts(s, summary, true)
			final = &NewReport{Summary: summary, Final: true, Posted: posted, Turn: turn}
		}
	}
	if err := c.store.Dissolve(ctx, s.ID, closingSummary(s, a, stats, c.cfg.Now()), final, MessageParts); err != nil {
		return noTeam(err)
	}
	c.cfg.CancelSession(s.ID)
	c.log.Info("session dissolved", "session_id", s.ID, "by", a.UserID)
	return nil
}

func closingSummary(s Session, a Actor, st SessionStats, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "👋 **Team dissolved** by <@%s>\n**Goal:** %s\n", a.UserID, Truncate(s.Goal, 500))
	fmt.Fprintf(&b, "In %s the team handled %d %s with %d %s",
		Elapsed(now.Sub(s.CreatedAt)), st.Turns, plural(st.Turns, "message", "messages"), st.Tasks, plural(st.Tasks, "subtask", "subtasks"))
	roles := make([]string, 0, len(st.TasksDone))
	for r := range st.TasksDone {
		roles = append(roles, r)
	}
	slices.Sort(roles)
	if len(roles) > 0 {
		parts := make([]string, len(roles))
		for i, r := range roles {
			parts[i] = fmt.Sprintf("%s %d", r, st.TasksDone[r])
		}
		fmt.Fprintf(&b, " (finished: %s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, " and used %s tokens.\n%s", Tokens(st.Usage.Total()), ArchivedNote)
	return Truncate(b.String(), MaxMessageLen)
}
