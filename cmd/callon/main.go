// Command callon runs the callon Discord bot: a team of LLM workers in a
// thread, coordinated by a master that posts one merged reply.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…" (by
// GoReleaser, and by the Dockerfile's VERSION); see build.
var version = ""

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		os.Exit(1) // run has said why
	}
}
