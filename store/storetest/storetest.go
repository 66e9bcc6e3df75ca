// Package storetest gives tests a fresh, migrated Postgres database each.
//
// The first call in a test binary migrates a template database; every
// test then gets a copy of it (CREATE DATABASE … TEMPLATE), which takes a
// few milliseconds, and drops it when the test ends. Call Main from the
// package's TestMain so the template is dropped too:
//
//	func TestMain(m *testing.M) { storetest.Main(m) }
//
// The server is DATABASE_URL, by default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable; its user
// needs CREATEDB. Tests fail, never skip, when it cannot be reached.
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/callonbot/callon/store"
)

// DefaultURL is the server used when DATABASE_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

const howToStart = "start Postgres with `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start` " +
	"or `docker compose up -d postgres`, or point DATABASE_URL at a server whose user may CREATE DATABASE"

// server is the per-binary state: one admin pool and one template.
var server struct {
	once     sync.Once
	err      error
	baseURL  string
	admin    *pgxpool.Pool
	template string // "" until created

	// Postgres refuses to copy a template another session is using, and
	// CREATE DATABASE … TEMPLATE connects to it: one copy at a time.
	createMu sync.Mutex
}

// setup connects the admin pool and migrates the template, once.
func setup() error {
	server.once.Do(func() {
		server.baseURL = os.Getenv("DATABASE_URL")
		if server.baseURL == "" {
			server.baseURL = DefaultURL
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cfg, err := pgxpool.ParseConfig(server.baseURL)
		if err != nil {
			server.err = fmt.Errorf("storetest: cannot parse DATABASE_URL: %s", howToStart)
			return
		}
		cfg.MaxConns = 4
		admin, err := pgxpool.NewWithConfig(ctx, cfg)
		if err == nil {
			err = admin.Ping(ctx)
		}
		if err != nil {
			server.err = fmt.Errorf("storetest: cannot reach Postgres (%v); %s", err, howToStart)
			return
		}
		server.admin = admin

		name := "callon_tpl_" + randomHex()
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			server.err = fmt.Errorf("storetest: create template: %w", err)
			return
		}
		server.template = name
		s, err := store.Open(ctx, dbURL(server.baseURL, name), slog.New(slog.DiscardHandler))
		if err != nil {
			server.err = fmt.Errorf("storetest: open template: %w", err)
			return
		}
		defer s.Close()
		if _, err := s.Migrate(ctx); err != nil {
			server.err = fmt.Errorf("storetest: migrate template: %w", err)
		}
	})
	return server.err
}

// Main runs the tests of m, then drops the template database, runs
// cleanups (a test binary's own fixtures: files, servers), and exits.
// Call it from TestMain.
func Main(m *testing.M, cleanups ...func()) {
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	if server.admin != nil {
		if server.template != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if _, err := server.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+server.template+" WITH (FORCE)"); err != nil {
				fmt.Fprintf(os.Stderr, "storetest: drop template %s: %v\n", server.template, err)
			}
			cancel()
		}
		server.admin.Close()
	}
	os.Exit(code)
}

// New returns a Store on a fresh, fully migrated database, closed and
// dropped when the test ends.
func New(tb testing.TB) *store.Store {
	tb.Helper()
	return Open(tb, URL(tb))
}

// Open opens a store on the database at u (one of this package's); it is
// closed when the test ends.
func Open(tb testing.TB, u string) *store.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := store.Open(ctx, u, slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatalf("storetest: %v", err)
	}
	// Cleanups run last-in first-out: the store closes before the drop.
	tb.Cleanup(s.Close)
	return s
}

// URL returns the URL of a fresh, fully migrated database, dropped when
// the test ends (connections still open to it are terminated). For tests
// that start the whole program with DATABASE_URL.
func URL(tb testing.TB) string {
	tb.Helper()
	return create(tb, true)
}

// EmptyURL returns the URL of a fresh database with no schema at all,
// dropped when the test ends. For tests of migrations.
func EmptyURL(tb testing.TB) string {
	tb.Helper()
	return create(tb, false)
}

func create(tb testing.TB, migrated bool) string {
	tb.Helper()
	if err := setup(); err != nil {
		tb.Fatalf("%v", err)
	}
	name := "callon_t_" + randomHex()
	stmt := "CREATE DATABASE " + name + " TEMPLATE template0"
	if migrated {
		stmt = "CREATE DATABASE " + name + " TEMPLATE " + server.template
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	server.createMu.Lock()
	_, err := server.admin.Exec(ctx, stmt)
	server.createMu.Unlock()
	if err != nil {
		tb.Fatalf("storetest: create database: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := server.admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("storetest: drop database %s: %v", name, err)
		}
	})
	return dbURL(server.baseURL, name)
}

// dbURL is base with its database replaced by name.
func dbURL(base, name string) string {
	if u, err := url.Parse(base); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		u.Path = "/" + name
		return u.String()
	}
	// keyword/value form: a later setting wins.
	return strings.TrimSpace(base) + " dbname=" + name
}

// randomHex is 16 lowercase hex digits, safe in an unquoted identifier.
func randomHex() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// Exec runs sql on the database at url (one of this package's), for
// fixtures and fault injection below the store's API. It fails the test
// on error.
func Exec(tb testing.TB, url, sql string, args ...any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		tb.Fatalf("storetest: connect: %v", err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, sql, args...); err != nil {
		tb.Fatalf("storetest: exec: %v", err)
	}
}
