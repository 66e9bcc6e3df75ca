package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/llm/llmtest"
)

// Secrets never reach the model, the database, the log or Discord. The
// operator's configuration holds secrets in every place they hide — the
// model server's URL (userinfo), an MCP server's URL (query) and header,
// a provider's URL, the webhook's URL (query) and secret, a callback's
// URL — and every one of those meets an error on the way (an MCP server
// that refuses connections, a webhook endpoint and a callback that are
// down). A steered worker copies its whole prompt and its tools' results
// into its report, which the team posts. Then every sink is searched:
// each model request, each row of each table, each log line, each
// Discord message (with its earlier versions). (An MCP server's URL used
// to reach the worker's prompt, the tool results in the database and a
// WARN line, from which the worker posted it; OPENAI_BASE_URL was logged
// raw.)
func TestSecretsReachNoSink(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{
		"model server URL": "BASEURLSECRET7f3a",
		"MCP server URL":   "MCPURLSECRET91bc",
		"MCP header":       "MCPHDRSECRET5d2e",
		"provider URL":     "PROVIDERSECRET3b8e",
		"webhook URL":      "HOOKURLSECRETc41d",
		"callback URL":     "CBURLSECRETe7f1",
	}
	hookKey := "whsec_" + base64.StdEncoding.EncodeToString([]byte("HOOKKEYSECRETaa09-padding"))
	secrets["webhook secret"] = strings.TrimPrefix(hookKey, "whsec_")

	worker := func(r llmtest.Request) llmtest.Reply {
		if len(r.ToolResults()) == 0 {
			return llmtest.Call("web__search", map[string]string{"q": "x"})
		}
		// Steered: it reports everything it was shown.
		return report("PROMPT: " + r.System() + "\nTOOL: " + lastToolResult(r))
	}
	w, c := setupAPI(t, llmtest.Switch(
		llmtest.MatchFunc(func(r llmtest.Request) bool { return strings.Contains(r.LastUser(), "Started through callon's API") },
			llmtest.Always(llmtest.Calls(reportBack("REPORTED"), reply("Done.")))),
		llmtest.Match(masterPrompt, delegateThenMerge("scout")),
		llmtest.Match("You are the scout", worker)),
		"CALLON_PROVIDERS", "other=https://u:"+secrets["provider URL"]+"@other.example/v1",
		"CALLON_WEBHOOK_URL", "http://127.0.0.1:1/hook?key="+secrets["webhook URL"],
		"CALLON_WEBHOOK_SECRET", hookKey)
	// The model server's URL, with a secret in its userinfo.
	w.stop()
	w.env["OPENAI_BASE_URL"] = strings.Replace(w.ai.URL(), "http://", "http://callon:"+secrets["model server URL"]+"@", 1)
	w.withRolesFile(fmt.Sprintf(`
mcp_servers:
  web:
    url: "http://127.0.0.1:1/mcp?token=%s"
    guilds: all
    headers: {Authorization: "Bearer %s"}
roles:
  - {name: scout, description: Scouts, prompt: You scout., tools: [web.*]}
`, secrets["MCP server URL"], secrets["MCP header"]))
	w.start()

	thread := w.teamIn("general", "Find things")
	mustContain(t, "reply", w.waitReply(thread, w.say(thread, "go")), "Some of your tools are unavailable", "TOOL: web__search")
	body := map[string]any{"idempotency_key": "k-secret", "guild_id": w.dc.GuildID(), "channel": "#random",
		"user_id": w.dc.UserID(), "goal": "Report back", "callback_url": "http://127.0.0.1:1/cb?sig=" + secrets["callback URL"]}
	if r := c.do("POST", "/v1/dispatch", body); r.Status != 201 {
		t.Fatalf("dispatch: %d %s", r.Status, r.Raw)
	}
	w.dc.WaitFor(t, func() bool {
		return w.count(`SELECT count(*)::int FROM webhook_events WHERE last_error IS NOT NULL AND url IS NULL`) > 0 &&
			w.count(`SELECT count(*)::int FROM webhook_events WHERE last_error IS NOT NULL AND url IS NOT NULL`) > 0
	}, "a webhook delivery and a callback to fail")

	w.logs.mu.Lock() // callon still runs, and logs
	logged := strings.Join(w.logs.lines, "")
	w.logs.mu.Unlock()
	sinks := map[string]string{
		"the model's prompts": modelRequests(w),
		"the database":        dumpDatabase(t, w),
		"the log":             logged,
		"Discord":             discordText(w),
	}
	for sink, text := range sinks {
		if text == "" {
			t.Errorf("%s: nothing to search", sink)
		}
		for what, s := range secrets {
			if strings.Contains(text, s) {
				i := strings.Index(text, s)
				t.Errorf("the %s's secret reached %s: …%s…", what, sink, text[max(i-120, 0):min(i+40, len(text))])
			}
		}
	}
}

// modelRequests is every request the model server received, as text.
func modelRequests(w *world) string {
	var b strings.Builder
	for _, r := range w.ai.Requests() {
		fmt.Fprintf(&b, "%+v\n", r.Request)
	}
	return b.String()
}

// dumpDatabase is every row of every table of the world's database, as
// JSON lines.
func dumpDatabase(t *testing.T, w *world) string {
	t.Helper()
	w.count(`SELECT 1`) // opens w.pool
	ctx := context.Background()
	rows, err := w.pool.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, table := range tables {
		var dump string
		// Where a callback goes is configuration the API caller gave, kept
		// to deliver it (sessions.callback_url, webhook_events.url); what
		// is searched is everything else.
		if err := w.pool.QueryRow(ctx, `SELECT coalesce(string_agg((row_to_json(t)::jsonb - 'callback_url' - 'url')::text, E'\n'), '') FROM `+
			pgx.Identifier{table}.Sanitize()+` t`).Scan(&dump); err != nil {
			t.Fatalf("dump %s: %v", table, err)
		}
		b.WriteString(dump)
		b.WriteByte('\n')
	}
	return b.String()
}

// discordText is every message of the guild's channels and their
// threads, earlier versions included.
func discordText(w *world) string {
	var b strings.Builder
	for _, name := range []string{"general", "random"} {
		ch := w.dc.ChannelID(name)
		ids := []string{ch}
		for _, th := range w.dc.Threads(ch) {
			ids = append(ids, th.ID)
		}
		for _, id := range ids {
			for _, m := range w.dc.Messages(id) {
				b.WriteString(m.Content + "\n" + strings.Join(m.History, "\n") + "\n")
				for _, a := range m.Attachments {
					b.Write(a.Data)
				}
			}
		}
	}
	return b.String()
}
