// Command river compares callon's task burn-down with River's, tuned, at
// the same number of slots, in one run on the same Postgres: N no-op
// tasks enqueued beforehand, then run to completion by callon's real
// worker pool (claims and outcomes as callon writes them: each claim and
// each outcome a durable commit, every outcome guarded by its attempt)
// and by a River client with as many workers, its fetches tuned for
// throughput. It is a module of its own, so that River never enters
// callon's dependencies:
//
//	cd bench/river && go run . -tasks 20000 -slots 16,100
//
// DATABASE_URL names the Postgres server (a user that may create
// databases); each run gets a scratch database, dropped after.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/callonbot/callon/internal/bench"
	"github.com/callonbot/callon/store"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "river:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("river", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tasks := fs.Int("tasks", 20000, "no-op tasks (jobs) per burn-down")
	slotsFlag := fs.String("slots", "16,100", "comma-separated numbers of slots (callon) and workers (River) to compare at")
	teams := fs.Int("teams", 100, "teams callon's tasks are spread over, in rounds of 25 (River's jobs belong to none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dbURL := getenv("DATABASE_URL")
	if dbURL == "" {
		return errors.New("DATABASE_URL is required: a Postgres server whose user may create databases")
	}
	var slots []int
	for _, f := range strings.Split(*slotsFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("-slots: %q is not a positive number", f)
		}
		slots = append(slots, n)
	}
	fmt.Fprintf(stdout, "burn-down of %d no-op tasks (callon's over %d teams) · %s %s/%s · %d CPUs\n\n", *tasks, *teams, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Fprintf(stdout, "%6s %14s %14s %7s  %s\n", "slots", "callon task/s", "River job/s", "ratio", "target ≥ 0.5×")
	for _, n := range slots {
		fmt.Fprintf(stderr, "river: callon with %d slots…\n", n)
		sizes := bench.QuickSizes()
		sizes.BurnTasks, sizes.BurnSlots, sizes.BurnTeams = *tasks, n, *teams
		rep, err := bench.Run(ctx, bench.Deps{DatabaseURL: dbURL}, sizes, []string{"burndown"})
		if err != nil {
			return err
		}
		callon := throughput(rep)
		fmt.Fprintf(stderr, "river: River with %d workers…\n", n)
		riverRate, err := riverBurnDown(ctx, dbURL, *tasks, n)
		if err != nil {
			return fmt.Errorf("River: %w", err)
		}
		ratio := callon / riverRate
		verdict := "met"
		if ratio < 0.5 {
			verdict = "NOT met"
		}
		fmt.Fprintf(stdout, "%6d %14.0f %14.0f %6.2f×  %s\n", n, callon, riverRate, ratio, verdict)
	}
	return nil
}

// throughput is the burn-down stage's tasks per second.
func throughput(rep *bench.Report) float64 {
	for _, s := range rep.Stages {
		for _, v := range s.Values {
			if v.Name == "throughput" {
				return v.Value
			}
		}
	}
	return 0
}

// noop is River's no-op job.
type noop struct{}

// Kind names the job kind.
func (noop) Kind() string { return "noop" }

// noopWorker works a no-op job by counting it.
type noopWorker struct {
	river.WorkerDefaults[noop]
	done *atomic.Int64
	all  chan struct{}
	n    int64
}

// Work counts the job; the last one closes all.
func (w *noopWorker) Work(context.Context, *river.Job[noop]) error {
	if w.done.Add(1) == w.n {
		close(w.all)
	}
	return nil
}

// riverBurnDown inserts n no-op jobs into a scratch database migrated
// for River, then times a client with slots workers from its start until
// every job was worked and the client stopped (its completions written).
func riverBurnDown(ctx context.Context, dbURL string, n, slots int) (float64, error) {
	url, drop, err := store.CreateScratchDatabase(ctx, dbURL, "callon_bench_river_")
	if err != nil {
		return 0, err
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		drop(dctx)
	}()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return 0, err
	}
	cfg.MaxConns = int32(max(slots, 4) + 10)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return 0, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return 0, err
	}
	w := &noopWorker{done: &atomic.Int64{}, all: make(chan struct{}), n: int64(n)}
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	client, err := river.NewClient(driver, &river.Config{
		Queues:  map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: slots}},
		Workers: workers,
		// Tuned for throughput: fetch again as soon as River allows.
		FetchCooldown:     river.FetchCooldownMin,
		FetchPollInterval: 10 * time.Millisecond,
		Logger:            slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return 0, err
	}
	params := make([]river.InsertManyParams, 0, 1000)
	for i := range n {
		params = append(params, river.InsertManyParams{Args: noop{}})
		if len(params) == cap(params) || i == n-1 {
			if _, err := client.InsertManyFast(ctx, params); err != nil {
				return 0, err
			}
			params = params[:0]
		}
	}
	began := time.Now()
	if err := client.Start(ctx); err != nil {
		return 0, err
	}
	select {
	case <-w.all:
	case <-time.After(30 * time.Minute):
		return 0, fmt.Errorf("%d of %d jobs worked within 30 minutes", w.done.Load(), n)
	}
	if err := client.Stop(ctx); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(began).Seconds(), nil
}
