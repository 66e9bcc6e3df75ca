package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/callonbot/callon/internal/proc"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/tools/fetch"
)

// fetchURLTool is fetch_url as the model is offered it.
func fetchURLTool() master.Tool {
	return master.Tool{
		Name: FetchURL,
		Description: "Fetch a web page over http or https and read it as text: HTML is made readable, " +
			"JSON and other text come as they are. The answer starts with the final URL (after redirects) " +
			"and the HTTP status. Only public addresses can be fetched; long pages are cut.",
		Parameters: json.RawMessage(`{"type":"object","additionalProperties":false,"required":["url"],` +
			`"properties":{"url":{"type":"string","description":"The absolute http:// or https:// URL to fetch."}}}`),
	}
}

// FetchURLTool is fetch_url as a model is offered it: callon eval offers
// it, scripted, to the roles of its worker cases.
func FetchURLTool() master.Tool { return fetchURLTool() }

// fetchURL runs fetch_url: the page's final URL, status and type, then
// its text.
func (m *Manager) fetchURL(ctx context.Context, f *fetch.Fetcher, raw json.RawMessage) (string, bool) {
	var args struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(raw, &args); err != nil || strings.TrimSpace(args.URL) == "" {
		return FetchURL + `: give {"url": "https://…"}`, true
	}
	p, err := f.Fetch(ctx, args.URL)
	if err != nil {
		return fmt.Sprintf("%s %s: %v", FetchURL, args.URL, err), true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\nStatus: %s\nContent-Type: %s\n", p.URL, p.Status, p.ContentType)
	if p.Truncated {
		fmt.Fprintf(&b, "[only the first %d bytes of the body were read]\n", p.Read)
	}
	b.WriteByte('\n')
	switch {
	case !p.IsText:
		fmt.Fprintf(&b, "[%s content, %s read: not text, not shown]", p.ContentType, proc.ByteSize(int(p.Read)))
	case strings.TrimSpace(p.Text) == "":
		b.WriteString("[no text]")
	default:
		b.WriteString(p.Text)
	}
	return b.String(), p.StatusCode >= 400
}
