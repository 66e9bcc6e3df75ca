package store

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
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

	mu    sync.Mutex
	spent map[string]time.Duration // by statement, its first words
	calls map[string]int
}

// Spent lists, for each statement sent outside a batch, its calls and
// the total time until its result was read, most time first.
func (c *Counts) Spent() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := slices.Collect(maps.Keys(c.spent))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(c.spent[b], c.spent[a]) })
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%8d calls %10s total %8s each  %s", c.calls[k], c.spent[k].Round(time.Millisecond),
			(c.spent[k] / time.Duration(c.calls[k])).Round(time.Microsecond), k)
	}
	return out
}

type started struct {
	at  time.Time
	sql string
}

// benchTracer is a pgx tracer that counts into Counts.
type benchTracer struct{ c *Counts }

func (t benchTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if ctx.Value(inBatch{}) == nil {
		t.c.RoundTrips.Add(1)
	}
	t.c.Statements.Add(1)
	return context.WithValue(ctx, started{}, started{time.Now(), d.SQL})
}

func (t benchTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	st, ok := ctx.Value(started{}).(started)
	if !ok {
		return
	}
	key := strings.Join(strings.Fields(st.sql), " ")
	key = key[:min(len(key), 60)]
	t.c.mu.Lock()
	if t.c.spent == nil {
		t.c.spent, t.c.calls = map[string]time.Duration{}, map[string]int{}
	}
	t.c.spent[key] += time.Since(st.at)
	t.c.calls[key]++
	t.c.mu.Unlock()
}

type inBatch struct{}

func (t benchTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	t.c.RoundTrips.Add(1)
	return context.WithValue(ctx, inBatch{}, true)
}

func (t benchTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	t.c.Statements.Add(1)
}

func (benchTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

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
	cfg.ConnConfig.Tracer = benchTracer{counts}
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
