// Package store owns callon's persistence: every SQL statement, the pgx
// connection pool, the embedded schema migrations, and the LISTEN/NOTIFY
// wake-ups that tell workers and masters something changed. It speaks
// master's domain types; no pgx type leaves this package.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/callonbot/callon/internal/proc"
	"github.com/callonbot/callon/master"
)

// Store is callon's Postgres store. It is safe for concurrent use.
type Store struct {
	pool   *pgxpool.Pool
	logger *slog.Logger

	webhooks    atomic.Bool  // see EnableWebhooks
	maxAttempts atomic.Int32 // see SetMaxAttempts
	wakes       localWakes   // this process's own wakes, delivered at commit
	holdSweep   atomic.Int64 // when SweepExpired last looked for expired holds (Unix ns)

	// holds and settles write the holds and settlements of model calls
	// asked for at the same time together (see HoldSpend, SettleSpend).
	holds   proc.Group[master.Hold, holdResult]
	settles proc.Group[settlement, error]
}

// pingTimeout bounds the connectivity check in Open.
const pingTimeout = 10 * time.Second

// Open connects to the database at databaseURL (a postgres:// URL or a
// keyword/value string) and checks that it answers. It does not migrate;
// call Migrate. Errors never contain the password from databaseURL.
func Open(ctx context.Context, databaseURL string, logger *slog.Logger, opts ...Option) (*Store, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		// pgx's parse errors quote the connection string, and redacting a
		// malformed one is guesswork: say nothing about it instead.
		return nil, errors.New("open store: cannot parse the database URL (not shown: it may hold a password)")
	}
	if !strings.Contains(databaseURL, "pool_max_conns") {
		// Workers, masters and the bot share the pool; pgx's default
		// (max(4, NumCPU)) is tight for that on small machines.
		cfg.MaxConns = int32(max(8, 2*runtime.NumCPU()))
	}
	if !strings.Contains(databaseURL, "pool_max_conn_idle_time") {
		cfg.MaxConnIdleTime = 5 * time.Minute
	}
	if !strings.Contains(databaseURL, "pool_health_check_period") {
		cfg.HealthCheckPeriod = 30 * time.Second
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "callon"
	}
	secrets := secretsOf(databaseURL, &cfg.ConnConfig.Config)
	var o pgxConfig
	for _, opt := range opts {
		opt(&o)
	}
	if o.statements != nil || o.log != nil {
		cfg.ConnConfig.Tracer = counter{o.statements, o.log}
	}
	if o.readOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}

	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, withHint(redact(fmt.Errorf("open store: %w", err), secrets), err, &cfg.ConnConfig.Config)
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, withHint(redact(fmt.Errorf("open store: ping: %w", err), secrets), err, &cfg.ConnConfig.Config)
	}
	s := &Store{pool: pool, logger: logger.With("component", "store")}
	s.holds = proc.Group[master.Hold, holdResult]{Max: maxHoldsTogether, Write: s.holdTogether}
	s.settles = proc.Group[settlement, error]{Max: maxHoldsTogether, Write: s.settleTogether}
	return s, nil
}

// maxHoldsTogether bounds the holds, or the settlements, written at once.
const maxHoldsTogether = 64

// querier runs statements: the pool, or a transaction, so that a read
// can be part of a larger one.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// SetMaxAttempts sets how many times a task may be claimed before it
// fails (CALLON_MAX_ATTEMPTS): for new tasks, handoffs, and tasks resumed
// with an answer (which get that many fresh attempts). Zero or less means
// the default, 3. Call it once, before the store is used.
func (s *Store) SetMaxAttempts(n int) { s.maxAttempts.Store(int32(n)) }

// attempts is the configured attempts per task.
func (s *Store) attempts() int {
	if n := int(s.maxAttempts.Load()); n > 0 {
		return n
	}
	return 3
}

// Close closes every connection of the pool. It waits for connections in
// use to be released.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that the database answers, for health checks.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	return nil
}

// redactedError carries a message scrubbed of secrets. It deliberately does
// not unwrap: the original chain still holds the secret.
type redactedError struct{ msg string }

func (e *redactedError) Error() string { return e.msg }

// secrets are the forms in which a connection string's password could
// appear in an error, and the names (user, database, host) an error shows
// as they are, even when one of them equals the password.
type secrets struct {
	passwords []string
	names     []string
}

var kvPassword = regexp.MustCompile(`password\s*=\s*('(?:[^'\\]|\\.)*'|\S+)`)

// secretsOf lists every form in which the password of connString could
// appear in an error (as parsed, URL-escaped, and as written), and the
// names of cc.
func secretsOf(connString string, cc *pgconn.Config) secrets {
	var out secrets
	add := func(p string) {
		if p != "" {
			out.passwords = append(out.passwords, p, url.QueryEscape(p), url.PathEscape(p))
		}
	}
	add(cc.Password)
	if u, err := url.Parse(connString); err == nil && u.User != nil {
		p, _ := u.User.Password()
		add(p)
		if raw := u.User.String(); strings.Contains(raw, ":") {
			add(raw[strings.Index(raw, ":")+1:])
		}
		for k, vs := range u.Query() {
			if strings.Contains(k, "password") {
				for _, v := range vs {
					add(v)
				}
			}
		}
	}
	for _, m := range kvPassword.FindAllStringSubmatch(connString, -1) {
		add(strings.Trim(m[1], "'"))
	}
	out.names = []string{cc.User, cc.Database, cc.Host}
	return out
}

// redact returns err unchanged unless its text holds the password, in
// which case it returns the text with the password masked, and nothing
// else: an occurrence inside a longer word is not the password, and one
// that is the value of a user, database or host field (pgx's "failed to
// connect to `user=… database=…`") is that name. A password equal to one
// of the names is masked only where it follows "password=": anywhere
// else it is the name, which the error shows anyway.
func redact(err error, s secrets) error {
	msg := err.Error()
	scrubbed := msg
	for _, p := range s.passwords {
		scrubbed = maskToken(scrubbed, p, !slices.Contains(s.names, p))
	}
	if scrubbed == msg {
		return err
	}
	return &redactedError{msg: scrubbed}
}

// maskToken replaces the occurrences of secret in msg that are whole
// tokens with "xxxxx": all of them but the values of name fields when
// bare, else only those that are the value of a password field.
func maskToken(msg, secret string, bare bool) string {
	if secret == "" {
		return msg
	}
	var b strings.Builder
	for {
		i := strings.Index(msg, secret)
		if i < 0 {
			b.WriteString(msg)
			return b.String()
		}
		end := i + len(secret)
		token := (i == 0 || !wordByte(msg[i-1])) && (end == len(msg) || !wordByte(msg[end]))
		before := strings.TrimSuffix(msg[:i], "'")
		name, password := false, strings.HasSuffix(before, "password=")
		for _, k := range []string{"user=", "database=", "dbname=", "host="} {
			name = name || strings.HasSuffix(before, k)
		}
		b.WriteString(msg[:i])
		if token && (password || bare && !name) {
			b.WriteString("xxxxx")
		} else {
			b.WriteString(secret)
		}
		msg = msg[end:]
	}
}

func wordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
