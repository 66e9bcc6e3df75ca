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

	scrub "github.com/callonbot/callon/redact"
)

// Defaults for the operator contract; docs/configuration.md documents
// each one.
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
	DefaultSweepInterval   = 5 * time.Second
	DefaultMaxAttempts     = 3
	DefaultWorkerSlots     = 16 // a slot waits on the network: a full team fans out in one wave
	DefaultLLMConcurrency  = 8
	DefaultSessionTokens   = 2_000_000
	DefaultMaxOutput       = 4096
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
	Sharding      Sharding

	DatabaseURL string // may carry a password: never print it raw

	OpenAIKey     string // secret
	OpenAIBaseURL string
	// ToolDialect is the OPENAI_BASE_URL server's (CALLON_TOOL_DIALECT):
	// "auto" or "strict", by default strict for OpenAI only.
	ToolDialect string
	MasterModel string
	WorkerModel string

	RolesFile string
	// MasterPrompt is the master's instructions read from
	// CALLON_MASTER_PROMPT_FILE; "" keeps callon's own.
	MasterPrompt string
	// Roles is the roles file's rosters; nil without a file.
	Roles []Roster
	// Features are what the roles file's scopes say of their teams'
	// features (personas, memory, review).
	Features []Features
	// MCPServers is the roles file's mcp_servers, in name order.
	MCPServers []MCPServer
	// GuildTrustedBots are the roles file's trusted_bots, by guild id.
	GuildTrustedBots map[string][]string
	// GuildFetchAllow are the roles file's fetch_allow, by guild id: the
	// private hosts fetch_url may reach for that guild only.
	GuildFetchAllow map[string][]string
	// OutboundAllow is the roles file's outbound_allow: hosts fetch_url
	// reaches without approval even for a role that reads private data.
	OutboundAllow []string
	// Providers are the named model providers besides OPENAI_*, from the
	// roles file and CALLON_PROVIDERS, in name order.
	Providers []Provider
	// Models is what a role may name (CALLON_MODELS); the worker model
	// is always on it.
	Models   []string
	HTTPAddr string
	// PublicURL is CALLON_PUBLIC_URL: where Discord reaches HTTPAddr, for
	// the pictures of personas; "" for none.
	PublicURL string
	LogLevel  slog.Level
	LogFormat string // "text" or "json"

	Limits      Limits
	HandBack    HandBack
	Webhook     Webhook
	API         API
	Dashboard   Dashboard
	Attachments Attachments
	Caps        Caps
	Tools       Tools

	// Warnings are problems that do not stop callon: deprecated names,
	// a database that is probably not the one meant. Log them at start.
	Warnings []string

	errs []error // problems found while parsing; reported by Validate
	// rolesFileErr is every problem of the roles file; Validate reports
	// it with the problems callers found in it beyond its shape.
	rolesFileErr *RolesFileError
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
	MaxOutput      int           // CALLON_MAX_OUTPUT_TOKENS: max_tokens of a model call whose role sets none
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
		Sharding:      p.sharding(),
		DatabaseURL:   strings.TrimSpace(getenv("DATABASE_URL")),
		OpenAIKey:     strings.TrimSpace(getenv("OPENAI_API_KEY")),
		OpenAIBaseURL: p.url("OPENAI_BASE_URL", DefaultOpenAIBaseURL),
		MasterModel:   cmp.Or(strings.TrimSpace(getenv("CALLON_MASTER_MODEL")), DefaultMasterModel),
		WorkerModel:   cmp.Or(strings.TrimSpace(getenv("CALLON_WORKER_MODEL")), DefaultWorkerModel),
		RolesFile:     strings.TrimSpace(getenv("CALLON_ROLES_FILE")),
		HTTPAddr:      p.httpAddr(),
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
			MaxOutput:      p.int("CALLON_MAX_OUTPUT_TOKENS", DefaultMaxOutput, 16, 200_000),
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
	if d, err := toolDialect(getenv("CALLON_TOOL_DIALECT"), c.OpenAIBaseURL); err != nil {
		p.fail("CALLON_TOOL_DIALECT", "%v", err)
	} else {
		c.ToolDialect = d
	}
	if c.RolesFile != "" {
		rf, err := loadRolesFile(c.RolesFile, getenv)
		if err != nil && !errors.As(err, &c.rolesFileErr) {
			p.fail("CALLON_ROLES_FILE", "%v", err)
		}
		c.Roles, c.MCPServers, c.Providers, c.GuildTrustedBots = rf.Rosters, rf.MCPServers, rf.Providers, rf.TrustedBots
		c.GuildFetchAllow, c.OutboundAllow = rf.FetchAllow, rf.OutboundAllow
		c.Features = rf.Features
		bindImplicitGrants(c.MCPServers, c.DiscordGuild)
	}
	c.Providers = p.providers(c.Providers)
	if path := strings.TrimSpace(getenv("CALLON_MASTER_PROMPT_FILE")); path != "" {
		var err error
		if c.MasterPrompt, err = ReadMasterPrompt(path); err != nil {
			p.fail("CALLON_MASTER_PROMPT_FILE", "%v", err)
		}
	}
	c.HandBack = p.handBack()
	c.Webhook = p.webhook()
	c.API = p.api(c.HTTPAddr)
	c.Dashboard = p.dashboard(c.HTTPAddr, c.DiscordAppID)
	c.PublicURL = p.publicURL(c.HTTPAddr)
	c.Attachments = p.attachments()
	c.Caps = p.caps()
	c.Tools = p.tools()
	c.errs, c.Warnings = p.errs, p.warnings
	if db := databaseName(c.DatabaseURL); db == "postgres" {
		c.Warnings = append(c.Warnings, "DATABASE_URL names the database \"postgres\", Postgres's maintenance database: "+
			"callon's tables would be created there; create a database for callon (createdb callon) and name it instead")
	}
	if c.DatabaseURL != "" && !checkDSN(c.DatabaseURL) {
		// The raw value may hold a password: describe it, never echo it.
		c.errs = append(c.errs, fieldError("DATABASE_URL", "must be a postgres:// URL or a keyword/value string (host=… dbname=…)"))
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
// calling command requires. rolesFile adds problems the caller found in
// the roles file beyond its shape (a role the operator's policy refuses),
// reported with the file's own in one CALLON_ROLES_FILE error.
func (c Config) Validate(need Need, rolesFile ...Problem) error {
	errs := append([]error(nil), c.errs...)
	if c.rolesFileErr != nil || len(rolesFile) > 0 {
		all := &RolesFileError{Path: c.RolesFile}
		if c.rolesFileErr != nil {
			all.Problems = append(all.Problems, c.rolesFileErr.Problems...)
		}
		all.Problems = append(all.Problems, rolesFile...)
		errs = append(errs, fieldError("CALLON_ROLES_FILE", all.Error()))
	}
	if need&NeedDatabase != 0 && c.DatabaseURL == "" {
		errs = append(errs, fieldError("DATABASE_URL", "is required: a Postgres database of callon's own, "+
			"e.g. postgres://callon:PASSWORD@localhost:5432/callon (create it first: createdb callon)"))
	}
	if need&NeedDiscord != 0 && c.DiscordToken == "" {
		errs = append(errs, fieldError("DISCORD_TOKEN", "is required (the bot token from the Discord Developer Portal)"))
	}
	if need&NeedDiscord != 0 {
		if err := implicitGrants(c.MCPServers); err != nil {
			errs = append(errs, err)
		}
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

// String describes the configuration with every secret redacted, as
// key=value pairs.
func (c Config) String() string {
	var b strings.Builder
	for i, a := range c.attrs() {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%v", a.Key, a.Value)
	}
	return b.String()
}

// LogValue logs the configuration as a group of fields, every secret
// redacted.
func (c Config) LogValue() slog.Value { return slog.GroupValue(c.attrs()...) }

// Summary is what the start-up log line shows of the configuration:
// where callon's data and models are, and every setting that differs
// from its default, secrets redacted. LogValue has every setting.
func (c Config) Summary() slog.Value {
	defaults := map[string]string{}
	for _, a := range Load(func(string) string { return "" }).attrs() {
		defaults[a.Key] = a.Value.String()
	}
	essential := map[string]bool{"database_url": true, "openai_base_url": true, "master_model": true,
		"worker_model": true, "discord_token": true, "openai_api_key": true}
	var out []slog.Attr
	for _, a := range c.attrs() {
		if essential[a.Key] || a.Value.String() != defaults[a.Key] {
			out = append(out, a)
		}
	}
	return slog.GroupValue(out...)
}

// attrs is every setting, secrets redacted.
func (c Config) attrs() []slog.Attr {
	l, h, w := c.Limits, c.HandBack, c.Webhook
	return []slog.Attr{
		slog.String("discord_token", redact(c.DiscordToken)),
		slog.String("discord_app_id", c.DiscordAppID),
		slog.String("discord_guild_id", c.DiscordGuild),
		slog.String("discord_api_url", c.DiscordAPIURL),
		slog.String("discord_shards", c.Sharding.String()),
		slog.String("database_url", RedactURL(c.DatabaseURL)),
		slog.String("openai_api_key", redact(c.OpenAIKey)),
		slog.String("openai_base_url", scrub.URL(c.OpenAIBaseURL)),
		slog.String("tool_dialect", c.ToolDialect),
		slog.String("master_model", c.MasterModel),
		slog.String("worker_model", c.WorkerModel),
		slog.String("models", strings.Join(c.Models, ",")),
		slog.String("roles_file", c.RolesFile),
		slog.Int("master_prompt_chars", len(c.MasterPrompt)),
		slog.String("http_addr", c.HTTPAddr),
		slog.String("public_url", c.PublicURL),
		slog.String("log_level", c.LogLevel.String()),
		slog.String("log_format", c.LogFormat),
		slog.Int("max_workers", l.MaxWorkers),
		slog.Int("max_rounds", l.MaxRounds),
		slog.Int("max_tasks", l.MaxTasks),
		slog.String("task_timeout", l.TaskTimeout.String()),
		slog.String("task_lease", l.TaskLease.String()),
		slog.String("sweep_interval", l.SweepInterval.String()),
		slog.Int("max_attempts", l.MaxAttempts),
		slog.Int("worker_slots", l.WorkerSlots),
		slog.Int("llm_concurrency", l.LLMConcurrency),
		slog.Int64("max_session_tokens", l.SessionTokens),
		slog.Int("max_output_tokens", l.MaxOutput),
		slog.Int("history", l.History),
		slog.Int("max_prompt", l.MaxPrompt),
		slog.Int("llm_retries", l.LLMRetries),
		slog.Int("master_retries", l.MasterRetries),
		slog.String("master_retry_delay", l.MasterRetry.String()),
		slog.Int("max_master_calls", l.MaxMasterCalls),
		slog.String("outbox_retry_for", l.OutboxRetryFor.String()),
		slog.Bool("dispatch", h.Dispatch),
		slog.Int("dispatch_depth", h.DispatchDepth),
		slog.Int("max_active_sessions", h.MaxActiveSessions),
		slog.Int("report_cap", h.ReportCap),
		slog.String("trusted_bots", strings.Join(h.TrustedBots, ",")),
		slog.String("webhook_url", cmp.Or(scrub.URL(w.URL), "(unset)")),
		slog.String("webhook_secret", redact(w.Secret)),
		slog.Int("webhook_retries", w.Retries),
		slog.String("api_secret", redact(c.API.Secret)),
		slog.Int("api_rate", c.API.Rate),
		slog.String("dashboard_token", redact(c.Dashboard.Token)),
		slog.String("discord_client_secret", redact(c.Dashboard.ClientSecret)),
		slog.String("dashboard_redirect_url", c.Dashboard.RedirectURL),
		slog.String("providers", providerList(c.Providers)),
		slog.String("discord_cdn_url", c.Attachments.CDNURL),
		slog.Int64("attachment_max_file", c.Attachments.MaxFile),
		slog.Int64("attachment_max_message", c.Attachments.MaxMessage),
		slog.String("vision_models", strings.Join(c.Attachments.VisionModels, ",")),
		slog.Int("max_user_sessions", c.Caps.MaxUserSessions),
		slog.Int64("guild_daily_tokens", c.Caps.GuildDailyTokens),
		slog.Int("max_queued_turns", c.Caps.MaxQueuedTurns),
		slog.Int("user_turns_per_minute", c.Caps.UserTurnsPerMinute),
		slog.String("prices", c.Caps.pricesString()),
		slog.String("retention", c.Caps.Retention.String()),
		slog.String("fetch_allow", strings.Join(c.Tools.FetchAllow, ",")),
		slog.String("approval_timeout", c.Tools.ApprovalTimeout.String()),
		slog.String("mcp_servers", mcpServerNames(c.MCPServers)),
	}
}

// Heartbeat is how often a worker extends its lease: a third of it, so two
// heartbeats can be lost before a lease lapses.
func (l Limits) Heartbeat() time.Duration { return l.TaskLease / 3 }

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
		parts[i] = p.Name + "=" + scrub.URL(p.BaseURL)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// mcpServerNames lists the names of servers, comma separated.
func mcpServerNames(servers []MCPServer) string {
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.Name
	}
	return strings.Join(names, ",")
}
