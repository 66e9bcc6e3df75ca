package store

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Counts is what a counting store's pool sent: round trips (a statement,
// or a batch of them, each a wait for the server) and statements.
type Counts struct {
	RoundTrips atomic.Int64
	Statements atomic.Int64
}

// counter is a pgx tracer that counts into Counts.
type counter struct{ c *Counts }

func (t counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	if ctx.Value(inBatch{}) == nil {
		t.c.RoundTrips.Add(1)
	}
	t.c.Statements.Add(1)
	return ctx
}

func (counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

type inBatch struct{}

func (t counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	t.c.RoundTrips.Add(1)
	return context.WithValue(ctx, inBatch{}, true)
}

func (t counter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	t.c.Statements.Add(1)
}

func (counter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// OpenCounting opens a store on the database at url (one of storetest's)
// whose pool counts what it sends, for benchmarks. It is closed when tb
// ends.
func OpenCounting(tb testing.TB, url string) (*Store, *Counts) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, url, slog.New(slog.DiscardHandler))
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	cfg := s.pool.Config()
	s.pool.Close()
	counts := new(Counts)
	cfg.ConnConfig.Tracer = counter{counts}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	s.pool = pool
	tb.Cleanup(s.Close)
	return s, counts
}

// Rollback is the store's rollback of tx, for tests.
func Rollback(ctx context.Context, tx pgx.Tx) { rollback(ctx, tx) }
