// Package mcptest is an MCP server for tests, built with the official Go
// SDK. Handler serves it over Streamable HTTP (for httptest); the
// mcptestserver command serves it over stdio, for tests that build it and
// run it as a child process.
package mcptest

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names, as the server lists them.
const (
	ToolEcho    = "echo"
	ToolAdd     = "add"
	ToolFail    = "fail"
	ToolSlow    = "slow"
	ToolBig     = "big"
	ToolCounter = "counter"
	ToolImage   = "image"
	ToolEnviron = "environ"
)

// FailMessage is the text of the fail tool's error.
const FailMessage = "this tool always fails"

// maxBig bounds the big tool's output.
const maxBig = 16 << 20

// Options configure the test server.
type Options struct {
	// CounterFile is where the counter tool appends a line holding the
	// server's process id, once per call. Without it, counter fails.
	CounterFile string
	// Header, when set, is a header every HTTP request to Handler must
	// carry, with the value Value; other requests get 401.
	Header, Value string
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to return"`
}

type addIn struct {
	A float64 `json:"a" jsonschema:"the first addend"`
	B float64 `json:"b" jsonschema:"the second addend"`
}

type slowIn struct {
	MS int `json:"ms" jsonschema:"how long to take, in milliseconds"`
}

type bigIn struct {
	Bytes int `json:"bytes" jsonschema:"how many bytes of text to return"`
}

type none struct{}

// NewServer returns the test server with its tools: echo{text},
// add{a,b}, fail{} (a tool error), slow{ms} (honours cancellation),
// big{bytes}, counter{} (see Options.CounterFile), image{} (an image
// and a line of text) and environ{} (the server's environment, one
// variable a line).
func NewServer(opts Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: ToolEcho, Description: "Returns its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolAdd, Description: "Adds two numbers."},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			return text(strconv.FormatFloat(in.A+in.B, 'g', -1, 64)), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolFail, Description: "Always fails."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New(FailMessage)
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolSlow, Description: "Takes ms milliseconds, or until cancelled."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			t := time.NewTimer(time.Duration(in.MS) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				return text(fmt.Sprintf("took %d ms", in.MS)), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolBig, Description: "Returns bytes bytes of text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in bigIn) (*mcp.CallToolResult, any, error) {
			if in.Bytes < 0 || in.Bytes > maxBig {
				return nil, nil, fmt.Errorf("bytes must be between 0 and %d", maxBig)
			}
			return text(strings.Repeat("0123456789abcdef", in.Bytes/16+1)[:in.Bytes]), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolCounter, Description: "Counts its calls in a file."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			n, err := count(opts.CounterFile)
			if err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("call %d by process %d", n, os.Getpid())), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolImage, Description: "Returns a tiny image."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "a picture:"},
				&mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 2048)},
			}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolEnviron, Description: "Returns the server's environment."},
		func(context.Context, *mcp.CallToolRequest, none) (*mcp.CallToolResult, any, error) {
			return text(strings.Join(os.Environ(), "\n")), nil, nil
		})
	return s
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// count appends this process's id to path and returns how many lines it
// now has.
func count(path string) (int, error) {
	if path == "" {
		return 0, errors.New("no counter file")
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return 0, err
	}
	if _, err := fmt.Fprintln(f, os.Getpid()); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strings.Count(string(data), "\n"), nil
}

// Handler serves NewServer(opts) over Streamable HTTP, refusing requests
// without opts.Header when it is set.
func Handler(opts Options) http.Handler {
	srv := NewServer(opts)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	if opts.Header == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(opts.Header)), []byte(opts.Value)) != 1 {
			http.Error(w, "missing or wrong "+opts.Header, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
