package master

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// MayManageGuild reports whether a member with these guild-level
// permissions (computed from the member's roles, never from a channel's
// overwrites) may change guild-wide settings.
func MayManageGuild(guildPermissions int64) bool {
	return guildPermissions&(PermManageGuild|PermAdministrator) != 0
}

// GuildSpend is a guild's spending of the UTC day.
type GuildSpend struct {
	Today       []Usage // by model
	DailyBudget *int64  // set by an admin; nil: the deployment's
}

// SessionSpend is a team's spending.
type SessionSpend struct {
	ByModel []Usage
	Budget  *int64 // set by an admin; nil: the deployment's
}

// LimitChange is one entry of the audit trail of budgets and allow lists.
type LimitChange struct {
	What   string // guild_budget, team_budget, access_allow, access_remove, access_clear
	Detail json.RawMessage
	By     string
	At     time.Time
}

// LimitStore is what /budget and /access need from Postgres.
type LimitStore interface {
	SessionFinder
	AccessReader
	GuildSpend(ctx context.Context, guildID string) (GuildSpend, error)
	SessionSpend(ctx context.Context, sessionID int64) (SessionSpend, error)
	// SetGuildBudget and SetSessionBudget set a budget (nil: back to the
	// default) and record who did.
	SetGuildBudget(ctx context.Context, guildID string, tokens *int64, by string) error
	SetSessionBudget(ctx context.Context, sessionID int64, tokens *int64, by string) error
	LimitChanges(ctx context.Context, guildID string, limit int) ([]LimitChange, error)
	// AllowAccess and RemoveAccess change rules and record who did; they
	// return how many rules changed.
	AllowAccess(ctx context.Context, guildID string, rules []AccessRule, by string) (int, error)
	RemoveAccess(ctx context.Context, guildID string, rules []AccessRule, by string) (int, error)
	// ClearAccess removes an action's rules and returns how many there
	// were.
	ClearAccess(ctx context.Context, guildID string, action AccessAction, by string) (int, error)
}

// Limits lets a guild's admins see and change its budgets and allow lists
// (/budget, /access). Callers check MayManageGuild first.
type Limits struct {
	budget Budget
	prices Prices
	store  LimitStore
	// configTrust lists the bots the deployment trusts in a guild
	// (CALLON_TRUSTED_BOTS, the roles file); nil: none.
	configTrust func(guildID string) []string
}

// WithConfigTrust sets where /access show finds the bots the deployment
// trusts in a guild, and returns l.
func (l *Limits) WithConfigTrust(f func(guildID string) []string) *Limits {
	l.configTrust = f
	return l
}

// NewLimits returns the admin side of the limits: budget holds the
// deployment's budgets, prices what models cost.
func NewLimits(budget Budget, prices Prices, store LimitStore) *Limits {
	return &Limits{budget: budget, prices: prices, store: store}
}

// effective is an admin's budget, or the default.
func effective(set *int64, def int64) int64 {
	if set != nil {
		return *set
	}
	return def
}

// spendLine renders usage against a budget: "12,345 of 2,000,000 tokens
// (≈ $0.0123)".
func spendLine(usage []Usage, budget int64, prices Prices) string {
	used := SumUsage(usage).Total()
	s := Tokens(used) + " tokens"
	if budget > 0 {
		s = fmt.Sprintf("%s of %s tokens (%d%%)", Tokens(used), Tokens(budget), min(used*100/budget, 999))
	} else {
		s += " (no limit)"
	}
	if c := prices.Cost(usage).String(); c != "" {
		s += ", " + c
	}
	return s
}

// budgetSource says where a budget comes from.
func budgetSource(set *int64) string {
	if set != nil {
		return "set by an admin"
	}
	return "the deployment's default"
}

// ShowBudget renders a guild's spending of the day and, in a team's
// thread, the team's.
func (l *Limits) ShowBudget(ctx context.Context, guildID, threadID string) (string, error) {
	g, err := l.store.GuildSpend(ctx, guildID)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "💰 **This server today** (UTC): %s — daily budget: %s.\n",
		spendLine(g.Today, effective(g.DailyBudget, l.budget.GuildDailyTokens), l.prices), budgetSource(g.DailyBudget))
	s, err := l.store.ActiveSession(ctx, threadID)
	switch {
	case errors.Is(err, ErrNotFound):
		b.WriteString("Run `/budget show` in a team's thread to see that team's budget too.\n")
	case err != nil:
		return "", err
	default:
		sp, err := l.store.SessionSpend(ctx, s.ID)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "👥 **This team**: %s — budget: %s.\n",
			spendLine(sp.ByModel, effective(sp.Budget, l.budget.SessionTokens), l.prices), budgetSource(sp.Budget))
	}
	changes, err := l.store.LimitChanges(ctx, guildID, 5)
	if err != nil {
		return "", err
	}
	if len(changes) > 0 {
		b.WriteString("\n**Latest changes**\n")
		for _, c := range changes {
			fmt.Fprintf(&b, "• <t:%d:R> <@%s>: %s\n", c.At.Unix(), c.By, describeChange(c))
		}
	}
	b.WriteString("\nChange them with `/budget server tokens:<n>` or `/budget team tokens:<n>` (0: no limit; no `tokens`: back to the default).")
	return Truncate(b.String(), MaxMessageLen), nil
}

// describeChange says what an audit entry changed.
func describeChange(c LimitChange) string {
	var d struct {
		Daily   *int64 `json:"daily_tokens"`
		Tokens  *int64 `json:"tokens"`
		Thread  string `json:"thread_id"`
		Action  string `json:"action"`
		Removed int    `json:"removed"`
		Rules   []struct {
			Action, Kind, ID string
		} `json:"rules"`
	}
	_ = json.Unmarshal(c.Detail, &d)
	budget := func(t *int64) string {
		if t == nil {
			return "the default"
		}
		if *t == 0 {
			return "no limit"
		}
		return Tokens(*t) + " tokens"
	}
	rules := func() string {
		parts := make([]string, len(d.Rules))
		for i, r := range d.Rules {
			action := r.Action
			if AccessAction(action) == AccessTrust {
				action = "trusted bot"
			}
			parts[i] = fmt.Sprintf("%s %s", action, mention(AccessKind(r.Kind), r.ID))
		}
		return strings.Join(parts, ", ")
	}
	switch c.What {
	case "guild_budget":
		return "server daily budget → " + budget(d.Daily)
	case "team_budget":
		return fmt.Sprintf("budget of the team in <#%s> → %s", d.Thread, budget(d.Tokens))
	case "access_allow":
		return "allowed " + rules()
	case "access_remove":
		return "removed " + rules()
	case "access_clear":
		return fmt.Sprintf("cleared the %s list (%d rules)", d.Action, d.Removed)
	default:
		return c.What
	}
}

// SetGuildBudget sets a guild's daily budget (nil: back to the default;
// 0: no limit) and says what it is now.
func (l *Limits) SetGuildBudget(ctx context.Context, guildID string, tokens *int64, by string) (string, error) {
	if err := checkBudget(tokens); err != nil {
		return "", err
	}
	if err := l.store.SetGuildBudget(ctx, guildID, tokens, by); err != nil {
		return "", err
	}
	return "✅ This server's daily budget is now " + budgetNow(tokens, l.budget.GuildDailyTokens) + ".", nil
}

// SetTeamBudget sets the budget of the team in a thread (nil: back to the
// default; 0: no limit) and says what it is now.
func (l *Limits) SetTeamBudget(ctx context.Context, threadID string, tokens *int64, by string) (string, error) {
	if err := checkBudget(tokens); err != nil {
		return "", err
	}
	s, err := l.store.ActiveSession(ctx, threadID)
	if err != nil {
		return "", noTeam(err)
	}
	if err := l.store.SetSessionBudget(ctx, s.ID, tokens, by); err != nil {
		return "", noTeam(err)
	}
	return "✅ This team's budget is now " + budgetNow(tokens, l.budget.SessionTokens) + ".", nil
}

// MaxBudget bounds a budget an admin may set, in tokens.
const MaxBudget = 1_000_000_000_000

func checkBudget(tokens *int64) error {
	if tokens != nil && (*tokens < 0 || *tokens > MaxBudget) {
		return Errorf(EInvalid, "a budget is a number of tokens from 0 (no limit) to %s", Tokens(MaxBudget))
	}
	return nil
}

func budgetNow(tokens *int64, def int64) string {
	switch {
	case tokens == nil && def == 0:
		return "the default: no limit"
	case tokens == nil:
		return "the default: " + Tokens(def) + " tokens"
	case *tokens == 0:
		return "no limit"
	default:
		return Tokens(*tokens) + " tokens"
	}
}

// mention renders an allow list entry as a mention (it pings nobody: the
// bot's messages allow no mentions).
func mention(kind AccessKind, id string) string {
	switch kind {
	case AccessUser:
		return "<@" + id + ">"
	case AccessRole:
		return "<@&" + id + ">"
	default:
		return "<#" + id + ">"
	}
}

// ShowAccess renders a guild's allow lists.
func (l *Limits) ShowAccess(ctx context.Context, guildID string) (string, error) {
	a, err := l.store.Access(ctx, guildID)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, act := range []struct {
		action AccessAction
		label  string
	}{{AccessStart, "**Start teams** (`/callon`, and a team dispatching into a channel)"}, {AccessTalk, "**Talk to teams** (messages in their threads)"}} {
		var who, where []string
		for _, r := range a.Rules(act.action) {
			if r.Kind == AccessChannel {
				where = append(where, mention(r.Kind, r.ID))
			} else {
				who = append(who, mention(r.Kind, r.ID))
			}
		}
		fmt.Fprintf(&b, "%s\n• who: %s\n• where: %s\n", act.label, listOrAny(who, "everyone"), listOrAny(where, "every channel"))
	}
	var bots []string
	for _, r := range a.Rules(AccessTrust) {
		bots = append(bots, mention(r.Kind, r.ID))
	}
	if l.configTrust != nil {
		for _, id := range l.configTrust(guildID) {
			bots = append(bots, mention(AccessUser, id)+" (deployment)")
		}
	}
	fmt.Fprintf(&b, "**Trusted bots** (may start teams by mentioning callon, and talk to teams)\n• %s\n", listOrAny(bots, "none: callon ignores every bot"))
	b.WriteString("\nChange them with `/access allow`, `/access remove`, `/access clear`, `/access trust` and `/access untrust`.")
	return Truncate(b.String(), MaxMessageLen), nil
}

// TrustBot adds a bot to the guild's trusted bots and says what changed.
// isBot says whether the user is a bot (people need no trust); selfID is
// callon's own id, which it never listens to.
func (l *Limits) TrustBot(ctx context.Context, guildID, botID string, isBot bool, selfID, by string) (string, error) {
	switch {
	case botID == "":
		return "", Errorf(EInvalid, "name the bot to trust")
	case botID == selfID:
		return "", Errorf(EInvalid, "callon never listens to itself, so it cannot be a trusted bot.")
	case !isBot:
		return "", Errorf(EInvalid, "<@%s> is a person, not a bot: people need no trust (`/access allow` limits who may use callon).", botID)
	}
	n, err := l.store.AllowAccess(ctx, guildID, []AccessRule{{Action: AccessTrust, Kind: AccessUser, ID: botID}}, by)
	if err != nil {
		return "", err
	}
	if n == 0 {
		return fmt.Sprintf("<@%s> was already trusted.", botID), nil
	}
	return fmt.Sprintf("✅ callon now listens to <@%s>: it may start a team by posting a message that starts with a mention of callon "+
		"and the goal, and talk to teams in their threads. Its messages count against the hourly cap between bots; it runs no admin action.", botID), nil
}

// UntrustBot removes a bot from the guild's trusted bots and says what
// changed.
func (l *Limits) UntrustBot(ctx context.Context, guildID, botID, by string) (string, error) {
	if botID == "" {
		return "", Errorf(EInvalid, "name the bot to stop trusting")
	}
	n, err := l.store.RemoveAccess(ctx, guildID, []AccessRule{{Action: AccessTrust, Kind: AccessUser, ID: botID}}, by)
	if err != nil {
		return "", err
	}
	if n == 0 {
		msg := fmt.Sprintf("<@%s> was not trusted in this server.", botID)
		if l.configTrust != nil && slices.Contains(l.configTrust(guildID), botID) {
			msg += " The deployment trusts it (CALLON_TRUSTED_BOTS or the roles file): its operator can change that."
		}
		return msg, nil
	}
	return fmt.Sprintf("🗑️ callon no longer listens to <@%s> here.", botID), nil
}

func listOrAny(items []string, anyone string) string {
	if len(items) == 0 {
		return anyone
	}
	return strings.Join(items, ", ")
}

// AllowAccess adds rules to a guild's allow lists and says what changed.
func (l *Limits) AllowAccess(ctx context.Context, guildID string, rules []AccessRule, by string) (string, error) {
	if len(rules) == 0 {
		return "", Errorf(EInvalid, "name a user, a role or a channel to allow")
	}
	n, err := l.store.AllowAccess(ctx, guildID, rules, by)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("✅ %d %s added. Only what the lists allow may %s now.", n, plural(n, "rule", "rules"), actionVerb(rules[0].Action)), nil
}

// RemoveAccess removes rules from a guild's allow lists and says what
// changed.
func (l *Limits) RemoveAccess(ctx context.Context, guildID string, rules []AccessRule, by string) (string, error) {
	if len(rules) == 0 {
		return "", Errorf(EInvalid, "name a user, a role or a channel to remove")
	}
	n, err := l.store.RemoveAccess(ctx, guildID, rules, by)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("🗑️ %d %s removed.", n, plural(n, "rule", "rules")), nil
}

// ClearAccess removes an action's rules: everyone may again.
func (l *Limits) ClearAccess(ctx context.Context, guildID string, action AccessAction, by string) (string, error) {
	n, err := l.store.ClearAccess(ctx, guildID, action, by)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("♻️ %d %s removed: everyone may %s again, in every channel.", n, plural(n, "rule", "rules"), actionVerb(action)), nil
}

func actionVerb(a AccessAction) string {
	if a == AccessTalk {
		return "talk to teams"
	}
	return "start teams"
}
