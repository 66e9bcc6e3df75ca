package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/callonbot/callon/internal/proc"
	"github.com/callonbot/callon/master"
)

// Call runs the tool a model called as name ("fetch_url" or
// "<server>__<tool>") with its JSON arguments as the model wrote them,
// for a role of guild ("": the operator's), within Options.CallTimeout: a
// server not granted to guild is an unknown tool, and fetch_url reaches
// the private hosts granted to guild only. Every failure, from unknown
// tool to timeout, becomes an error result the model can read: its Text
// cut to Options.MaxOutput bytes with a marker saying so, its Size the
// output's length before the cut. Call does not check the role's tools
// list (see Allows) nor approval (see NeedsApproval).
//
// A call is sent at most once, except that a call refused by a session
// already known to be broken is sent again, once, after a restart: the
// server never saw it.
func (m *Manager) Call(ctx context.Context, guild, name, args string) master.ToolResult {
	began := time.Now()
	callCtx, cancel := context.WithTimeout(ctx, m.opts.CallTimeout)
	defer cancel()
	text, isErr := m.call(callCtx, guild, name, json.RawMessage(args))
	if isErr && callCtx.Err() != nil {
		if ctx.Err() != nil {
			text = fmt.Sprintf("%s: cancelled", name)
		} else {
			// Sent, unanswered: the tool may have acted.
			text = fmt.Sprintf("%s: timed out after %s. It may or may not have taken effect; check before making it again.", name, m.opts.CallTimeout)
		}
	}
	return master.ToolResult{
		Text:     truncate(text, m.opts.MaxOutput),
		IsError:  isErr,
		Duration: time.Since(began),
		Size:     len(text),
	}
}

func (m *Manager) call(ctx context.Context, guild, name string, raw json.RawMessage) (string, bool) {
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return fmt.Sprintf("%s: %v", name, errClosed), true
	}
	args, err := callArgs(raw)
	if err != nil {
		return fmt.Sprintf("%s: %v", name, err), true
	}
	if name == FetchURL {
		return m.fetchURL(ctx, m.fetcherFor(guild), args)
	}
	srv, tool, _ := strings.Cut(name, Separator)
	s := m.servers[srv]
	if s == nil || tool == "" || !s.granted(guild) {
		return fmt.Sprintf("unknown tool %q", name), true
	}
	for attempt := 0; ; attempt++ {
		sess, err := s.session(ctx)
		if err != nil {
			return fmt.Sprintf("%s: %v", name, s.scrub(err)), true
		}
		res, err := sess.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err == nil {
			return render(res), res.IsError
		}
		if sess.overflow.Swap(false) {
			return fmt.Sprintf("%s: the server's answer was larger than %s, so it was not read", name, proc.ByteSize(int(m.opts.MaxResponse))), true
		}
		if unsent(err) {
			s.retire(sess, err)
			if attempt == 0 && ctx.Err() == nil {
				continue
			}
		}
		return fmt.Sprintf("%s: %v", name, s.scrub(err)), true
	}
}

// unsent says whether a call failed before the server could see it: the
// session was already broken or closed, or the request could not be
// written at all.
func unsent(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, syscall.EPIPE)
}

// callArgs checks a model's arguments: a JSON object, or nothing.
func callArgs(raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage("{}"), nil
	}
	if raw[0] != '{' || !json.Valid(raw) {
		return nil, errors.New("the arguments must be a JSON object")
	}
	return raw, nil
}

// render turns a tool's result into text: text content as it is, other
// content named with its type and size.
func render(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image: %s, %s]", c.MIMEType, proc.ByteSize(len(c.Data))))
		case *mcp.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio: %s, %s]", c.MIMEType, proc.ByteSize(len(c.Data))))
		case *mcp.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.Name, c.URI))
		case *mcp.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
				parts = append(parts, "[resource]")
			case r.Text != "":
				parts = append(parts, fmt.Sprintf("[resource: %s]\n%s", r.URI, r.Text))
			default:
				parts = append(parts, fmt.Sprintf("[resource: %s, %s, %s]", r.URI, r.MIMEType, proc.ByteSize(len(r.Blob))))
			}
		default:
			parts = append(parts, fmt.Sprintf("[%T content]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	if len(parts) == 0 {
		if res.IsError {
			return "the tool failed without saying why"
		}
		return "(no output)"
	}
	return strings.Join(parts, "\n")
}

// truncate cuts s to at most limit bytes, on a character boundary, and
// says so: "[output truncated: N of M bytes]" after the N bytes kept.
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	n := limit
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s\n[output truncated: %d of %d bytes]", s[:n], n, len(s))
}
