package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/callonbot/callon/config"
)

// status is the outcome of one check.
type status int

const (
	statusOK   status = iota // ✓
	statusWarn               // !: works, but worth knowing
	statusFail               // ✗: callon will not work as configured
	statusSkip               // –: not checked, for want of something else
)

func (s status) mark() string {
	return [...]string{"✓", "!", "✗", "–"}[s]
}

// finding is one line of callon doctor, and of the checks the bot logs
// at start: what was checked, what was found and, when it is not right,
// what to do.
type finding struct {
	status  status
	subject string
	text    string
	fix     string
}

func ok(subject, format string, args ...any) finding {
	return finding{status: statusOK, subject: subject, text: fmt.Sprintf(format, args...)}
}

func warn(subject, text, fix string) finding {
	return finding{status: statusWarn, subject: subject, text: text, fix: fix}
}

func fail(subject, text, fix string) finding {
	return finding{status: statusFail, subject: subject, text: text, fix: fix}
}

func skip(subject, text string) finding {
	return finding{status: statusSkip, subject: subject, text: text}
}

// write prints the finding: its mark, subject and text, and the fix on
// a line of its own.
func (f finding) write(w io.Writer) {
	fmt.Fprintf(w, "%s %s: %s\n", f.status.mark(), f.subject, strings.ReplaceAll(f.text, "\n", "\n    "))
	if f.fix != "" {
		fmt.Fprintf(w, "  → %s\n", f.fix)
	}
}

// log writes the finding as a log line: warnings and problems as WARN,
// the rest at DEBUG.
func (f finding) log(log *slog.Logger) {
	attrs := []any{"check", f.subject, "status", f.status.mark()}
	if f.fix != "" {
		attrs = append(attrs, "fix", f.fix)
	}
	if f.status == statusWarn || f.status == statusFail {
		log.Warn(f.text, attrs...)
		return
	}
	log.Debug(f.text, attrs...)
}

// tally counts findings by status.
func tally(fs []finding) (oks, warns, fails int) {
	for _, f := range fs {
		switch f.status {
		case statusOK:
			oks++
		case statusWarn:
			warns++
		case statusFail:
			fails++
		}
	}
	return oks, warns, fails
}

// logSummary logs the findings of the checks made at start, and one line
// that sums them up.
func logSummary(log *slog.Logger, what string, fs []finding) {
	for _, f := range fs {
		f.log(log)
	}
	oks, warns, fails := tally(fs)
	log.Info(what, "ok", oks, "warnings", warns, "problems", fails)
}

// doctorTimeout bounds each group of checks, so that callon doctor
// answers in seconds whatever does not answer.
const doctorTimeout = 10 * time.Second

// doctor checks everything a first run needs and prints one line per
// check; it fails when a check found a problem.
func doctor(ctx context.Context, cfg config.Config, args []string, stdout, usageOut io.Writer) error {
	var probe *bool
	ok, err := parseCommand("doctor", "check the configuration, the database, Discord, the model server and the tools; "+
		"each line ✓ or ✗ with the fix", args, usageOut, func(fs *flag.FlagSet) {
		probe = fs.Bool("probe-models", false, "ask each model for a tiny tool call (spends a few tokens)")
	})
	if !ok {
		return err
	}
	groups := []func(context.Context) []finding{
		func(context.Context) []finding { return checkConfig(cfg) },
		func(ctx context.Context) []finding { return checkDatabase(ctx, cfg) },
		func(ctx context.Context) []finding {
			return checkDiscord(ctx, cfg, discordLimits{guilds: 25, channels: 50})
		},
		func(ctx context.Context) []finding { return checkModelServer(ctx, cfg, *probe) },
		func(ctx context.Context) []finding { return checkTools(ctx, cfg) },
	}
	// Every group runs at once; they print in order.
	results := make([][]finding, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Go(func() {
			gctx, cancel := context.WithTimeout(ctx, doctorTimeout)
			defer cancel()
			results[i] = g(gctx)
		})
	}
	wg.Wait()
	var all []finding
	for _, fs := range results {
		for _, f := range fs {
			f.write(stdout)
		}
		all = append(all, fs...)
	}
	_, warns, fails := tally(all)
	switch {
	case fails > 0:
		fmt.Fprintf(stdout, "\n%s, %s: fix the ✗ lines, then run callon doctor again.\n", plural(fails, "problem"), plural(warns, "warning"))
		return fmt.Errorf("doctor found %s", plural(fails, "problem"))
	case warns > 0:
		fmt.Fprintf(stdout, "\nNo problem; %s worth a look.\n", plural(warns, "warning"))
	default:
		fmt.Fprintln(stdout, "\nEverything callon needs is in place.")
	}
	return nil
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// checkConfig reports the configuration's problems, each naming its
// variable, and its warnings.
func checkConfig(cfg config.Config) []finding {
	var out []finding
	need := config.NeedDatabase | config.NeedLLM
	if cfg.DiscordToken != "" {
		need |= config.NeedDiscord // what the bot will need (chat needs no token)
	}
	if err := cfg.Validate(need, rolePolicyProblems(cfg)...); err != nil {
		for _, e := range leaves(err) {
			var fe *config.FieldError
			if errors.As(e, &fe) {
				out = append(out, fail("configuration", fe.Var+": "+fe.Problem, "set "+fe.Var+" in .env or the environment (docs/configuration.md)"))
			} else {
				out = append(out, fail("configuration", e.Error(), "see docs/configuration.md"))
			}
		}
	} else {
		out = append(out, ok("configuration", "valid"))
	}
	for _, w := range cfg.Warnings {
		if strings.HasPrefix(w, "DATABASE_URL names the database \"postgres\"") {
			continue // the database's check says so, as a problem
		}
		out = append(out, warn("configuration", w, ""))
	}
	return out
}
