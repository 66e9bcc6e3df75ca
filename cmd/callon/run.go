package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"

	"github.com/callonbot/callon/config"
)

const usage = `callon: a Discord bot that turns a thread into a team room.

Usage:
  callon              run the bot, its master and an in-process worker pool
  callon worker       run workers only (scale out against the same Postgres)
  callon migrate      apply the database schema and exit
  callon signals --thread ID | --session ID
                      print a team's signals as JSON lines
  callon invite       print the OAuth2 URL that adds the bot to a server
  callon healthcheck  exit 0 when this host's callon is ready (GET /readyz at
                      CALLON_HTTP_ADDR): for container health checks
  callon version      print the version

Configuration comes from the environment; see README.md.
`

// run is the whole program; main only hands it the process's world. An
// error it returns has been written to stderr already, in the log format
// (LOG_FORMAT=json: one JSON line like every other).
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	cfg := config.Load(getenv)
	defer func() {
		if err != nil {
			reportFatal(cfg, stderr, err)
		}
	}()
	// In JSON mode nothing but JSON lines reaches stderr: no usage text.
	usageOut := stderr
	if cfg.LogFormat == "json" {
		usageOut = io.Discard
	}
	fs := flag.NewFlagSet("callon", flag.ContinueOnError)
	fs.SetOutput(usageOut)
	fs.Usage = func() { fmt.Fprint(usageOut, usage) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	cmd, rest := "", fs.Args()
	if len(rest) > 0 {
		cmd, rest = rest[0], rest[1:]
	}
	switch cmd {
	case "version":
		fmt.Fprintln(stdout, "callon", versionLine(build()))
		return nil
	case "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "healthcheck":
		return healthcheck(ctx, cfg, stdout)
	case "invite":
		return invite(cfg, stdout)
	case "migrate":
		if err := cfg.Validate(0); err != nil {
			return configError(err)
		}
		return migrate(ctx, cfg, newLogger(cfg, stderr), stdout)
	case "signals":
		if err := cfg.Validate(0); err != nil {
			return configError(err)
		}
		return signals(ctx, cfg, newLogger(cfg, stderr), rest, stdout, usageOut)
	case "worker":
		if err := cfg.Validate(config.NeedLLM); err != nil {
			return configError(err)
		}
		return serve(ctx, cfg, newLogger(cfg, stderr), false)
	case "", "run":
		if err := cfg.Validate(config.NeedDiscord | config.NeedLLM); err != nil {
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

// Permissions the bot asks for in its invite: View Channels, Send Messages,
// Send Messages in Threads, Create Public Threads, Read Message History,
// Embed Links.
const invitePermissions = 1<<10 | 1<<11 | 1<<38 | 1<<35 | 1<<16 | 1<<14

func invite(cfg config.Config, stdout io.Writer) error {
	if cfg.DiscordAppID == "" {
		return errors.New("DISCORD_APP_ID is required: the application id from the Developer Portal's General Information page")
	}
	q := url.Values{
		"client_id":   {cfg.DiscordAppID},
		"scope":       {"bot applications.commands"},
		"permissions": {strconv.FormatInt(invitePermissions, 10)},
	}
	fmt.Fprintln(stdout, "https://discord.com/oauth2/authorize?"+q.Encode())
	return nil
}
