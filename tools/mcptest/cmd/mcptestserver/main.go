// Command mcptestserver serves the mcptest tools over stdio, for tests
// that run an MCP server as a child process. MCPTEST_COUNTER_FILE names
// the counter tool's file; MCPTEST_START_FILE, a file it appends its
// process id to as it starts; MCPTEST_FAIL_START makes it exit at once,
// writing that text to stderr, as a server that cannot start does.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/callonbot/callon/tools/mcptest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mcptestserver:", err)
		os.Exit(3)
	}
}

func run(ctx context.Context, getenv func(string) string, stderr io.Writer) error {
	if path := getenv("MCPTEST_START_FILE"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(f, os.Getpid())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if msg := getenv("MCPTEST_FAIL_START"); msg != "" {
		return errors.New(msg)
	}
	fmt.Fprintln(stderr, "mcptestserver: serving on stdio")
	srv := mcptest.NewServer(mcptest.Options{CounterFile: getenv("MCPTEST_COUNTER_FILE")})
	return srv.Run(ctx, &mcp.StdioTransport{})
}
