// Package config builds callon's typed configuration from the environment.
// It is the only package that reads environment variables, always through an
// injected getenv, and it never lets a secret reach a log line or an error.
package config

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults for the operator contract; README.md documents each one.
const (
	DefaultDiscordAPIURL   = "https://discord.com"
	DefaultOpenAIBaseURL   = "https://api.openai.com/v1"
	DefaultMasterModel     = "gpt-4o"
	DefaultWorkerModel     = "gpt-4o-mini"
	DefaultMaxWorkers      = 8
	DefaultMaxRounds       = 3
	DefaultMaxTasks        = 6
	DefaultTaskTimeout     = 5 * time.Minute
	DefaultTaskLease       = 30 * time.Second
	DefaultSweepInterval   = time.Second
	DefaultMaxAttempts     = 3
	DefaultWorkerSlots     = 4
	DefaultLLMConcurrency  = 8
	DefaultSessionTokens   = 2_000_000
	DefaultHistoryMessages = 12
	DefaultMaxPrompt       = 4000
	DefaultLLMRetries      = 4
	DefaultMasterRetries   = 3
	DefaultMasterRetry     = 30 * time.Second
	DefaultMaxMasterCalls  = 30
	DefaultOutboxRetryFor  = 24 * time.Hour
)

// Config is everything callon reads from its environment.
type Config struct {
	DiscordToken  string // secret
	DiscordAppID  string
	DiscordGuild  string // register commands in this guild only
	DiscordAPIURL string

	DatabaseURL string // may carry a password: never print it raw

	OpenAIKey     string // secret
	OpenAIBaseURL string
	MasterModel   string
	WorkerModel   string

	RolesFile string
	// Roles is the roles file's rosters; nil without a file.
	Roles []Roster
	// MCPServers is the roles file's mcp_servers, in name order.
	MCPServers []MCPServer
	// Providers are the named model providers besides OPENAI_*, from the
	// roles file and CALLON_PROVIDERS, in name order.
	Providers []Provider
	// Models is what a role may name (CALLON_MODELS); the worker model
	// is always on it.
	Models    []string
	HTTPAddr  string
	LogLevel  slog.Level
	LogFormat string // "text" or "json"

	Limits   Limits
	HandBack HandBack
	Webhook  Webhook
	Tools    Tools

	// Warnings are problems that do not stop callon: deprecated names,
	// a database that is probably not the one meant. Log them at start.
	Warnings []string

	errs []error // problems found while parsing; reported by Validate
}

// Limits bound what a team may consume. Every one has a default.
type Limits struct {
	MaxWorkers     int           // CALLON_MAX_ROLES (formerly CALLON_MAX_WORKERS): roles per team
	MaxRounds      int           // CALLON_MAX_ROUNDS: delegation rounds per turn
	MaxTasks       int           // CALLON_MAX_TASKS: tasks per round
	TaskTimeout    time.Duration // CALLON_TASK_TIMEOUT: one worker's time on one task
	TaskLease      time.Duration // CALLON_TASK_LEASE: heartbeat every third of it
	SweepInterval  time.Duration // CALLON_SWEEP_INTERVAL: expired leases are requeued this often
	MaxAttempts    int           // CALLON_MAX_ATTEMPTS: claims of one task before it fails
	WorkerSlots    int           // CALLON_CONCURRENT_TASKS (formerly CALLON_WORKER_SLOTS): tasks one process runs at once; 0: none (bot only)
	LLMConcurrency int           // CALLON_LLM_CONCURRENCY: LLM calls one process makes at once
	SessionTokens  int64         // CALLON_MAX_SESSION_TOKENS: 0 means unlimited
	History        int           // CALLON_HISTORY: recent messages the master sees verbatim
	MaxPrompt      int           // CALLON_MAX_PROMPT: characters of a role's prompt
	LLMRetries     int           // CALLON_LLM_RETRIES: retries of one model call (429, 5xx)
	MasterRetries  int           // CALLON_MASTER_RETRIES: later retries of a master decision whose model call failed
	MasterRetry    time.Duration // CALLON_MASTER_RETRY_DELAY: the first of those waits, doubling
	MaxMasterCalls int           // CALLON_MAX_MASTER_CALLS: the master's model calls for one message, at most
	OutboxRetryFor time.Duration // CALLON_OUTBOX_RETRY_FOR: how long a message that cannot be posted is retried
}

// Load reads the configuration through getenv (os.Getenv in production).
// It never fails: problems are kept and reported together by Validate.
func Load(getenv func(string) string) Config {
	p := parser{getenv: getenv}
	c := Config{
		DiscordToken:  strings.TrimSpace(getenv("DISCORD_TOKEN")),
		DiscordAppID:  p.snowflake("DISCORD_APP_ID"),
		DiscordGuild:  p.snowflake("DISCORD_GUILD_ID"),
		DiscordAPIURL: p.url("DISCORD_API_URL", DefaultDiscordAPIURL),
		DatabaseURL:   strings.TrimSpace(getenv("DATABASE_URL")),
		OpenAIKey:     strings.TrimSpace(getenv("OPENAI_API_KEY")),
		OpenAIBaseURL: p.url("OPENAI_BASE_URL", DefaultOpenAIBaseURL),
		MasterModel:   cmp.Or(strings.TrimSpace(getenv("CALLON_MASTER_MODEL")), DefaultMasterModel),
		WorkerModel:   cmp.Or(strings.TrimSpace(getenv("CALLON_WORKER_MODEL")), DefaultWorkerModel),
		RolesFile:     strings.TrimSpace(getenv("CALLON_ROLES_FILE")),
		HTTPAddr:      strings.TrimSpace(getenv("CALLON_HTTP_ADDR")),
		LogLevel:      p.level("LOG_LEVEL"),
		LogFormat:     p.oneOf("LOG_FORMAT", "text", "text", "json"),
		Limits: Limits{
			MaxWorkers:     p.int(p.renamed("CALLON_MAX_ROLES", "CALLON_MAX_WORKERS"), DefaultMaxWorkers, 1, 25),
			MaxRounds:      p.int("CALLON_MAX_ROUNDS", DefaultMaxRounds, 1, 20),
			MaxTasks:       p.int("CALLON_MAX_TASKS", DefaultMaxTasks, 1, 50),
			TaskTimeout:    p.duration("CALLON_TASK_TIMEOUT", DefaultTaskTimeout, time.Second, 24*time.Hour),
			TaskLease:      p.duration("CALLON_TASK_LEASE", DefaultTaskLease, 3*time.Second, time.Hour),
			SweepInterval:  p.duration("CALLON_SWEEP_INTERVAL", DefaultSweepInterval, 100*time.Millisecond, time.Hour),
			MaxAttempts:    p.int("CALLON_MAX_ATTEMPTS", DefaultMaxAttempts, 1, 10),
			WorkerSlots:    p.int(p.renamed("CALLON_CONCURRENT_TASKS", "CALLON_WORKER_SLOTS"), DefaultWorkerSlots, 0, 256),
			LLMConcurrency: p.int("CALLON_LLM_CONCURRENCY", DefaultLLMConcurrency, 1, 1024),
			SessionTokens:  int64(p.int("CALLON_MAX_SESSION_TOKENS", DefaultSessionTokens, 0, 1<<31-1)),
			History:        p.int("CALLON_HISTORY", DefaultHistoryMessages, 2, 200),
			MaxPrompt:      p.int("CALLON_MAX_PROMPT", DefaultMaxPrompt, 100, 32000),
			LLMRetries:     p.int("CALLON_LLM_RETRIES", DefaultLLMRetries, 0, 10),
			MasterRetries:  p.int("CALLON_MASTER_RETRIES", DefaultMasterRetries, 0, 10),
			MasterRetry:    p.duration("CALLON_MASTER_RETRY_DELAY", DefaultMasterRetry, 100*time.Millisecond, time.Hour),
			MaxMasterCalls: p.int("CALLON_MAX_MASTER_CALLS", DefaultMaxMasterCalls, 2, 1000),
			OutboxRetryFor: p.duration("CALLON_OUTBOX_RETRY_FOR", DefaultOutboxRetryFor, time.Minute, 30*24*time.Hour),
		},
	}
	c.Models = p.models("CALLON_MODELS", c.WorkerModel, c.MasterModel)
	if c.RolesFile != "" {
		rf, err := loadRolesFile(c.RolesFile, getenv)
		if err != nil {
			p.fail("CALLON_ROLES_FILE", "%v", err)
		}
		c.Roles, c.MCPServers, c.Providers = rf.Rosters, rf.MCPServers, rf.Providers
	}
	c.Providers = p.providers(c.Providers)
	c.HandBack = p.handBack()
	c.Webhook = p.webhook()
	c.Tools = p.tools()
	c.errs, c.Warnings = p.errs, p.warnings
	if db := databaseName(c.DatabaseURL); db == "postgres" {
		c.Warnings = append(c.Warnings, "DATABASE_URL names the database \"postgres\", Postgres's maintenance database: "+
			"callon's tables would be created there; create a database for callon (createdb callon) and name it instead")
	}
	if c.DatabaseURL != "" {
		if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			// The raw value may hold a password: describe it, never echo it.
			c.errs = append(c.errs, fieldError("DATABASE_URL", "must be a postgres:// URL"))
		}
	}
	return c
}

// Need says which parts of the configuration a command requires.
type Need uint8

// What a command may need.
const (
	NeedDiscord  Need = 1 << iota // DISCORD_TOKEN
	NeedLLM                       // OPENAI_API_KEY for api.openai.com
	NeedDatabase                  // DATABASE_URL
)

// Validate reports every invalid field at once, each naming its variable
// and what is wrong, joined in one error. need adds the variables the
// calling command requires.
func (c Config) Validate(need Need) error {
	errs := append([]error(nil), c.errs...)
	if need&NeedDatabase != 0 && c.DatabaseURL == "" {
		errs = append(errs, fieldError("DATABASE_URL", "is required: a Postgres database of callon's own, "+
			"e.g. postgres://callon:PASSWORD@localhost:5432/callon (create it first: createdb callon)"))
	}
	if need&NeedDiscord != 0 && c.DiscordToken == "" {
		errs = append(errs, fieldError("DISCORD_TOKEN", "is required (the bot token from the Discord Developer Portal)"))
	}
	if need&NeedLLM != 0 && c.OpenAIKey == "" && strings.HasPrefix(c.OpenAIBaseURL, DefaultOpenAIBaseURL) {
		errs = append(errs, fieldError("OPENAI_API_KEY", "is required for "+DefaultOpenAIBaseURL+" (servers such as Ollama need none: set OPENAI_BASE_URL)"))
	}
	if c.Limits.SweepInterval > c.Limits.TaskLease {
		errs = append(errs, fieldError("CALLON_SWEEP_INTERVAL", "must not be longer than CALLON_TASK_LEASE"))
	}
	if c.Limits.MaxMasterCalls <= c.Limits.MaxRounds {
		errs = append(errs, fieldError("CALLON_MAX_MASTER_CALLS", fmt.Sprintf("must be more than CALLON_MAX_ROUNDS (%d): a message needs a call per round and one to reply", c.Limits.MaxRounds)))
	}
	return errors.Join(errs...)
}

// String describes the configuration with every secret redacted.
func (c Config) String() string {
	l := c.Limits
	return fmt.Sprintf("discord_token=%s discord_app_id=%q discord_guild_id=%q discord_api_url=%s "+
		"database_url=%s openai_api_key=%s openai_base_url=%s master_model=%s worker_model=%s "+
		"roles_file=%q http_addr=%q log_level=%s log_format=%s max_workers=%d max_rounds=%d max_tasks=%d "+
		"task_timeout=%s task_lease=%s sweep_interval=%s max_attempts=%d worker_slots=%d llm_concurrency=%d "+
		"max_session_tokens=%d history=%d models=%s max_prompt=%d",
		redact(c.DiscordToken), c.DiscordAppID, c.DiscordGuild, c.DiscordAPIURL,
		RedactURL(c.DatabaseURL), redact(c.OpenAIKey), c.OpenAIBaseURL, c.MasterModel, c.WorkerModel,
		c.RolesFile, c.HTTPAddr, c.LogLevel, c.LogFormat, l.MaxWorkers, l.MaxRounds, l.MaxTasks,
		l.TaskTimeout, l.TaskLease, l.SweepInterval, l.MaxAttempts, l.WorkerSlots, l.LLMConcurrency,
		l.SessionTokens, l.History, strings.Join(c.Models, ","), l.MaxPrompt) + fmt.Sprintf(" llm_retries=%d master_retries=%d master_retry_delay=%s max_master_calls=%d outbox_retry_for=%s",
		l.LLMRetries, l.MasterRetries, l.MasterRetry, l.MaxMasterCalls, l.OutboxRetryFor) +
		" " + c.HandBack.String() + " " + c.Webhook.String() + " " + c.Tools.String() + " providers=" + providerList(c.Providers)
}

// LogValue keeps secrets out of structured logs too.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Heartbeat is how often a worker extends its lease: a third of it, so two
// heartbeats can be lost before a lease lapses.
func (l Limits) Heartbeat() time.Duration { return l.TaskLease / 3 }

// RedactURL returns u with any password replaced by "xxxxx". A value that
// does not parse is replaced whole, since it might be a password itself.
func RedactURL(u string) string {
	if u == "" {
		return ""
	}
	p, err := url.Parse(u)
	if err != nil {
		return "(unparseable, redacted)"
	}
	return p.Redacted()
}

func redact(secret string) string {
	if secret == "" {
		return "(unset)"
	}
	return "(set)"
}

// FieldError is one invalid variable.
type FieldError struct {
	Var     string
	Problem string
}

func (e *FieldError) Error() string { return e.Var + ": " + e.Problem }

func fieldError(v, problem string) error { return &FieldError{Var: v, Problem: problem} }

// parser reads typed values and keeps every problem it meets.
type parser struct {
	getenv   func(string) string
	errs     []error
	warnings []string
}

// renamed returns the variable to read for a setting that was renamed:
// the new name, unless only the old one is set, which still works with a
// deprecation warning.
func (p *parser) renamed(name, old string) string {
	if strings.TrimSpace(p.getenv(name)) == "" && strings.TrimSpace(p.getenv(old)) != "" {
		p.warnings = append(p.warnings, fmt.Sprintf("%s is deprecated: rename it %s (the old name will stop working in a later release)", old, name))
		return old
	}
	return name
}

// databaseName is the database a postgres:// URL names, "" when it does
// not parse.
func databaseName(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return ""
	}
	return strings.TrimPrefix(u.Path, "/")
}

func (p *parser) fail(v, format string, args ...any) {
	p.errs = append(p.errs, fieldError(v, fmt.Sprintf(format, args...)))
}

func (p *parser) int(v string, def, lo, hi int) int {
	s := strings.TrimSpace(p.getenv(v))
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(strings.ReplaceAll(s, "_", ""))
	if err != nil || n < lo || n > hi {
		p.fail(v, "must be a whole number from %d to %d, got %q", lo, hi, s)
		return def
	}
	return n
}

func (p *parser) duration(v string, def, lo, hi time.Duration) time.Duration {
	s := strings.TrimSpace(p.getenv(v))
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < lo || d > hi {
		p.fail(v, "must be a duration from %s to %s such as \"30s\" or \"5m\", got %q", lo, hi, s)
		return def
	}
	return d
}

func (p *parser) url(v, def string) string {
	s := strings.TrimRight(strings.TrimSpace(p.getenv(v)), "/")
	if s == "" {
		return def
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.fail(v, "must be an http:// or https:// URL, got %q", s)
		return def
	}
	return s
}

func (p *parser) snowflake(v string) string {
	s := strings.TrimSpace(p.getenv(v))
	if s == "" {
		return ""
	}
	if _, err := strconv.ParseUint(s, 10, 64); err != nil {
		p.fail(v, "must be a numeric Discord id, got %q", s)
		return ""
	}
	return s
}

func (p *parser) oneOf(v, def string, allowed ...string) string {
	s := strings.ToLower(strings.TrimSpace(p.getenv(v)))
	if s == "" {
		return def
	}
	for _, a := range allowed {
		if s == a {
			return s
		}
	}
	p.fail(v, "must be one of %s, got %q", strings.Join(allowed, ", "), s)
	return def
}

func (p *parser) level(v string) slog.Level {
	s := strings.TrimSpace(p.getenv(v))
	if s == "" {
		return slog.LevelInfo
	}
	var l slog.Level
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		_ = l.UnmarshalText([]byte(s))
		return l
	}
	p.fail(v, "must be one of debug, info, warn, error, got %q", s)
	return slog.LevelInfo
}

// providerList names the providers and their URLs, never their keys.
func providerList(ps []Provider) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.Name + "=" + RedactURL(p.BaseURL)
	}
	return "[" + strings.Join(parts, ",") + "]"
}
