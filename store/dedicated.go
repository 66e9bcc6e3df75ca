package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/internal/proc"
)

// dedicated is a connection outside the pool that a process keeps for
// its lifetime (the wake-up listener, the liveness lock), established
// again after every loss with capped, jittered backoff.
type dedicated struct {
	name       string // for logs
	connect    func(ctx context.Context) (*pgx.Conn, error)
	logger     *slog.Logger
	minBackoff time.Duration
	maxBackoff time.Duration
}

// run calls session with a fresh connection until ctx ends, backing off
// between attempts; session calls established once the connection is
// ready for its work, which resets the backoff. The connection is closed
// after each session. It returns when ctx ends.
func (d *dedicated) run(ctx context.Context, session func(ctx context.Context, conn *pgx.Conn, established func()) error) {
	failures := 0
	lost := false
	for {
		err := d.once(ctx, func(ctx context.Context, conn *pgx.Conn) error {
			return session(ctx, conn, func() {
				if lost {
					d.logger.Info(d.name+" connected again", "failed_attempts", failures-1)
				}
				failures, lost = 0, false
			})
		})
		if ctx.Err() != nil {
			return
		}
		if failures == 0 {
			// Once per outage; the retries that follow log at debug.
			d.logger.Warn(d.name+" lost its connection; connecting again", "err", err)
			lost = true
		} else {
			d.logger.Debug(d.name+" could not connect", "err", err, "failures", failures)
		}
		failures++
		t := time.NewTimer(proc.Backoff(failures, d.minBackoff, d.maxBackoff))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// once connects, runs session and closes the connection.
func (d *dedicated) once(ctx context.Context, session func(ctx context.Context, conn *pgx.Conn) error) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := d.connect(cctx)
	cancel()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	return session(ctx, conn)
}
