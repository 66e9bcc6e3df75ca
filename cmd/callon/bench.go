package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/internal/bench"
	"github.com/callonbot/callon/store"
)

// benchCmd is `callon bench`: help and flag errors go to usageOut, the
// progress and the measured callon's warnings to stderr. command runs
// callon as a process of its own (the recovery and scale stages kill and
// measure it).
func benchCmd(ctx context.Context, cfg config.Config, args []string, stdout, stderr, usageOut io.Writer, command func(env map[string]string) *exec.Cmd) error {
	sizes := bench.DefaultSizes()
	var o benchOptions
	ok, err := parseCommand("bench", "measure callon's own cost against its fakes, on databases of its own (needs only DATABASE_URL)",
		args, usageOut, func(fs *flag.FlagSet) { o.declare(fs, &sizes) })
	if !ok {
		return err
	}
	if o.quick {
		// --quick changes the defaults, not the sizes given explicitly:
		// parse again over the quick ones.
		sizes = bench.QuickSizes()
		fs := flag.NewFlagSet("callon bench", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.declare(fs, &sizes)
		if err := fs.Parse(args); err != nil {
			return err
		}
	}
	if err := cfg.Validate(config.NeedDatabase); err != nil {
		return configError(err)
	}
	var only []string
	if o.stages != "" {
		only = strings.Split(o.stages, ",")
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if o.trace != "" {
		f, err := os.Create(o.trace)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	deps := bench.Deps{
		DatabaseURL: cfg.DatabaseURL,
		Start: func(ctx context.Context, env map[string]string, opts ...store.Option) error {
			cfg := config.Load(func(k string) string { return env[k] })
			if err := cfg.Validate(config.NeedDatabase | config.NeedDiscord | config.NeedLLM); err != nil {
				return err
			}
			return serve(ctx, cfg, newLogger(cfg, stderr), true, opts...)
		},
		Statements: o.statements,
		Command:    command,
		Progress:   stderr,
	}
	rep, err := bench.Run(ctx, deps, sizes, only)
	if err != nil {
		return err
	}
	if o.json {
		return rep.WriteJSON(stdout)
	}
	return rep.WriteTable(stdout)
}

// selfCommand runs this executable as callon with env as its whole
// environment (and PATH and HOME), in the temporary directory, so that no
// .env file of the working directory applies.
func selfCommand(env map[string]string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	cmd := exec.Command(exe)
	cmd.Dir = os.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

// benchOptions are callon bench's flags besides the sizes.
type benchOptions struct {
	quick, json, statements   bool
	stages, cpuProfile, trace string
}

func (o *benchOptions) declare(fs *flag.FlagSet, sizes *bench.Sizes) {
	fs.BoolVar(&o.quick, "quick", false, "small sizes: every stage in a few seconds (the smoke test's run); sizes given explicitly still apply")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON instead of a table")
	fs.StringVar(&o.stages, "stages", "", "comma-separated stages to run (default all): "+strings.Join(bench.Stages, ","))
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file")
	fs.StringVar(&o.trace, "trace", "", "write an execution trace of the run to this file")
	fs.BoolVar(&o.statements, "statements", false, "list the Postgres statements of each kind of turn (and of the idle process) by text")
	fs.IntVar(&sizes.Turns, "turns", sizes.Turns, "measured turns of each kind")
	fs.DurationVar(&sizes.ModelLatency, "model-latency", sizes.ModelLatency, "how long the fake model takes per call")
	fs.IntVar(&sizes.ContextTurns, "context-turns", sizes.ContextTurns, "turns of the context-growth session")
	fs.IntVar(&sizes.PickupTasks, "pickup-tasks", sizes.PickupTasks, "tasks of the pickup stage")
	fs.IntVar(&sizes.PickupRate, "pickup-rate", sizes.PickupRate, "tasks per second the pickup stage enqueues")
	fs.IntVar(&sizes.BurnTasks, "burn-tasks", sizes.BurnTasks, "no-op tasks of the burn-down stage")
	fs.IntVar(&sizes.BurnTeams, "burn-teams", sizes.BurnTeams, "teams the burn-down's tasks are spread over, in rounds of 25")
	fs.IntVar(&sizes.ActiveSessions, "active-sessions", sizes.ActiveSessions, "sessions with a turn in flight at once")
	fs.IntVar(&sizes.DormantSessions, "dormant-sessions", sizes.DormantSessions, "active sessions with nothing to do")
	fs.IntVar(&sizes.Kills, "kills", sizes.Kills, "process deaths of the recovery stage")
	fs.DurationVar(&sizes.RecoveryLatency, "recovery-latency", sizes.RecoveryLatency, "how long each model call takes in the recovery stage")
	fs.Func("outages", "comma-separated lengths of the outages of the outage stage (default "+durations(sizes.Outages)+")", func(v string) error {
		sizes.Outages = nil
		for _, f := range strings.Split(v, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(f))
			if err != nil || d <= 0 {
				return fmt.Errorf("%q is not a positive duration", f)
			}
			sizes.Outages = append(sizes.Outages, d)
		}
		return nil
	})
	fs.IntVar(&sizes.OutageTeams, "outage-teams", sizes.OutageTeams, "teams writing during each outage")
	fs.IntVar(&sizes.Shutdowns, "shutdowns", sizes.Shutdowns, "stops of the shutdown stage")
}

// durations lists ds as a flag takes them.
func durations(ds []time.Duration) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.String()
	}
	return strings.Join(parts, ",")
}
