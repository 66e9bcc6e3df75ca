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
  callon version      print the version

Configuration comes from the environment; see README.md.
`

// run is the whole program; main only hands it the process's world.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("callon", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
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
	cfg := config.Load(getenv)
	switch cmd {
	case "version":
		fmt.Fprintln(stdout, "callon", version)
		return nil
	case "help":
		fmt.Fprint(stdout, usage)
		return nil
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
		return signals(ctx, cfg, newLogger(cfg, stderr), rest, stdout, stderr)
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
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
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
