package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/config"
)

const usage = `callon: a Discord bot that turns a thread into a team room.

Usage:
  callon              run the bot, its master and an in-process worker pool
  callon worker       run workers only (scale out against the same Postgres)
  callon migrate      apply the database schema and exit
  callon signals --thread ID | --session ID
                      print a team's signals as JSON lines
  callon doctor [--probe-models]
                      check everything a first run needs: the configuration,
                      the database, Discord, the model server and the tools;
                      each line ✓ or ✗ with the fix
  callon chat --goal "…" | --resume | --demo
                      talk to a team in the terminal (no Discord needed;
                      --demo needs no model either: try it first)
  callon eval [--role master|worker] [--master-model M] [--cases …] [--json]
                      measure a model on callon's situations, graded
                      structurally (no database, no Discord); see
                      docs/models.md
  callon replay --session ID | --thread ID [--master-model M] [--prompt-file F]
                      re-run a recorded team's master decisions with another
                      model or prompt, with the recorded workers' results;
                      writes nothing
  callon bench [--quick] [--json]
                      measure callon's own cost (turn overhead, task pickup
                      and burn-down, memory per session, recovery) against
                      its fakes, on databases of its own: needs only
                      DATABASE_URL
  callon invite       print the OAuth2 URL that adds the bot to a server
  callon healthcheck  exit 0 when this host's callon is ready (GET /readyz at
                      CALLON_HTTP_ADDR): for container health checks
  callon version      print the version (also: callon --version)

Every command takes --help. Configuration comes from the environment and,
when it exists, a .env file in the working directory (CALLON_ENV_FILE names
another; the environment wins); see docs/configuration.md.
`

// run is the whole program; main only hands it the process's world. An
// error it returns has been written to stderr already, in the log format
// (LOG_FORMAT=json: one JSON line like every other).
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	var cfg config.Config // text until the configuration says otherwise
	defer func() {
		if err != nil {
			reportFatal(cfg, stderr, err)
		}
	}()
	// The env file first: it may set LOG_FORMAT.
	if getenv, err = config.WithEnvFile(getenv); err != nil {
		return err
	}
	cfg = config.Load(getenv)
	// In JSON mode nothing but JSON lines reaches stderr: no usage text.
	usageOut := stderr
	if cfg.LogFormat == "json" {
		usageOut = io.Discard
	}
	fs := flag.NewFlagSet("callon", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	fs.Usage = func() { fmt.Fprint(usageOut, usage) }
	showVersion := fs.Bool("version", false, "print the version")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *showVersion {
		fmt.Fprintln(stdout, "callon", versionLine(build()))
		return nil
	}
	cmd, rest := "", fs.Args()
	if len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}
	// onlyHelp parses a command that takes no arguments; false means it
	// printed its help (or refused an argument) and is done.
	onlyHelp := func(summary string) (bool, error) {
		return parseCommand(cmd, summary, rest, usageOut, nil)
	}
	switch cmd {
	case "version":
		if ok, err := onlyHelp("print the version"); !ok {
			return err
		}
		fmt.Fprintln(stdout, "callon", versionLine(build()))
		return nil
	case "doctor":
		return doctor(ctx, cfg, rest, stdout, usageOut)
	case "chat":
		return chat(ctx, getenv, rest, stdin, stdout, stderr)
	case "bench":
		return benchCmd(ctx, cfg, rest, stdout, stderr, usageOut, selfCommand)
	case "eval":
		return evalCmd(ctx, cfg, rest, stdin, stdout, stderr, usageOut)
	case "replay":
		return replayCmd(ctx, cfg, rest, stdin, stdout, stderr, usageOut)
	case "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "healthcheck":
		if ok, err := onlyHelp("exit 0 when this host's callon is ready (GET /readyz at CALLON_HTTP_ADDR)"); !ok {
			return err
		}
		return healthcheck(ctx, cfg, stdout)
	case "invite":
		if ok, err := onlyHelp("print the OAuth2 URL that adds the bot to a server; needs DISCORD_TOKEN or DISCORD_APP_ID"); !ok {
			return err
		}
		return invite(ctx, cfg, stdout)
	case "migrate":
		if ok, err := onlyHelp("apply the database schema (DATABASE_URL) and exit"); !ok {
			return err
		}
		if err := cfg.Validate(config.NeedDatabase); err != nil {
			return configError(err)
		}
		return migrate(ctx, cfg, newLogger(cfg, stderr), stdout)
	case "signals":
		return signals(ctx, cfg, rest, stdout, stderr)
	case "worker":
		if ok, err := onlyHelp("run workers only, against the same Postgres as the bot"); !ok {
			return err
		}
		if err := cfg.Validate(config.NeedDatabase|config.NeedLLM, rolePolicyProblems(cfg)...); err != nil {
			return configError(err)
		}
		return serve(ctx, cfg, newLogger(cfg, stderr), false)
	case "", "run":
		if cmd == "run" {
			if ok, err := onlyHelp("run the bot, its master and an in-process worker pool"); !ok {
				return err
			}
		}
		if err := cfg.Validate(config.NeedDatabase|config.NeedDiscord|config.NeedLLM, rolePolicyProblems(cfg)...); err != nil {
			return configError(err)
		}
		return serve(ctx, cfg, newLogger(cfg, stderr), true)
	default:
		fmt.Fprint(usageOut, usage)
		return fmt.Errorf("unknown command %q (callon help lists them)", cmd)
	}
}

// reportFatal writes the error that stops callon: "callon: …" in text
// mode; in JSON mode one line, with each invalid variable of a
// configuration error as a field of its own.
func reportFatal(cfg config.Config, stderr io.Writer, err error) {
	if cfg.LogFormat != "json" {
		fmt.Fprintln(stderr, "callon:", err)
		return
	}
	attrs := []any{"err", err.Error()}
	var problems []map[string]string
	for _, e := range leaves(err) {
		var fe *config.FieldError
		if errors.As(e, &fe) {
			problems = append(problems, map[string]string{"var": fe.Var, "problem": fe.Problem})
		}
	}
	if problems != nil {
		attrs = append(attrs, "problems", problems)
	}
	newLogger(cfg, stderr).Error("callon stopped", attrs...)
}

// leaves unwraps err into the errors it joins, depth first.
func leaves(err error) []error {
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		var out []error
		for _, e := range u.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	case interface{ Unwrap() error }:
		if inner := u.Unwrap(); inner != nil {
			if in := leaves(inner); len(in) > 1 {
				return in
			}
		}
	}
	return []error{err}
}

// parseCommand parses a subcommand's flags (declared by declare, if any)
// and refuses arguments it does not take. It reports false when the
// command should not run: it printed its help (err nil), or its
// arguments are wrong (err says how).
func parseCommand(name, summary string, args []string, stderr io.Writer, declare func(*flag.FlagSet)) (bool, error) {
	fs := flag.NewFlagSet("callon "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: callon %s\n  %s\n", name, summary)
		fs.PrintDefaults()
	}
	if declare != nil {
		declare(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return false, nil
		}
		return false, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return false, &argError{command: name, arg: fs.Arg(0)}
	}
	return true, nil
}

// argError is an argument given to a command that takes none.
type argError struct{ command, arg string }

func (e *argError) Error() string {
	return fmt.Sprintf("callon %s takes no argument %q", e.command, e.arg)
}

func configError(err error) error {
	return fmt.Errorf("invalid configuration:\n%w", err)
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func invite(ctx context.Context, cfg config.Config, stdout io.Writer) error {
	if cfg.DiscordAppID == "" && cfg.DiscordToken == "" {
		return errors.New("callon invite needs DISCORD_TOKEN (the bot token: the application is looked up with it) or DISCORD_APP_ID (the Developer Portal's General Information page)")
	}
	appID := cfg.DiscordAppID
	if appID == "" {
		var err error
		if appID, err = bot.ApplicationID(ctx, cfg.DiscordToken, cfg.DiscordAPIURL); err != nil {
			return err
		}
	}
	fmt.Fprintln(stdout, bot.InviteURL(appID))
	return nil
}
