package store

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// Option adjusts how Open connects.
type Option func(*pgxConfig)

// pgxConfig is what an Option may change.
type pgxConfig struct {
	statements *atomic.Int64
	log        func(sql string)
	readOnly   bool
}

// ReadOnly makes every transaction of the store's connections read-only
// (default_transaction_read_only): Postgres itself refuses any write, so
// a command that only reads (callon replay) cannot change a team, whatever
// path its code takes.
func ReadOnly() Option {
	return func(c *pgxConfig) { c.readOnly = true }
}

// WithStatementCounter counts on n every statement the store sends to
// Postgres (BEGIN and COMMIT included; each statement of a batch counts),
// on the pool's connections and on its dedicated ones (the listener, the
// liveness lock). `callon bench` reports statements per turn with it.
func WithStatementCounter(n *atomic.Int64) Option {
	return func(c *pgxConfig) { c.statements = n }
}

// WithStatementLog calls log with the text of every statement the store
// sends (as WithStatementCounter counts them); log must be safe for
// concurrent use. `callon bench --statements` lists a turn's statements
// with it.
func WithStatementLog(log func(sql string)) Option {
	return func(c *pgxConfig) { c.log = log }
}

// counter is a pgx tracer that counts statements, and logs them when
// log is set.
type counter struct {
	n   *atomic.Int64
	log func(sql string)
}

var (
	_ pgx.QueryTracer = counter{}
	_ pgx.BatchTracer = counter{}
)

func (c counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.count(d.SQL)
	return ctx
}

func (c counter) count(sql string) {
	if c.n != nil {
		c.n.Add(1)
	}
	if c.log != nil {
		c.log(sql)
	}
}

func (counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (counter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (c counter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.count(d.SQL)
}

func (counter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}
