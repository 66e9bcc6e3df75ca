package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/callonbot/callon/eval"
	"github.com/callonbot/callon/llm/llmtest"
	"github.com/callonbot/callon/store/storetest"
)

// A team recorded end to end, replayed with another scripted master:
// replay reports exactly the turns whose decisions changed, fed the
// recorded workers' results where the new master delegated as the old
// one did, and the database is the same row for row afterwards.
func TestReplayReportsTheTurnsThatChanged(t *testing.T) {
	t.Parallel()
	recorded := llmtest.Seq(
		reply("Hello! The team is here."),
		delegate(task{Role: "researcher", Instruction: "Find our competitors"}),
		reply("Our competitors: Lumio and Brightly."),
		delegate(task{Role: "researcher", Instruction: "Compare pricing"}, task{Role: "writer", Instruction: "Draft a tweet"}),
		reply("Pricing: Lumio $49, Brightly $39. Tweet: Meet Aurora."),
		llmtest.Call("ask_user", map[string]string{"question": "What should I book?"}),
	)
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, recorded),
		llmtest.Match("You are the researcher", llmtest.Seq(report("Lumio and Brightly"), report("PRICES-RECORDED: Lumio $49, Brightly $39"))),
		llmtest.Match("You are the writer", llmtest.Seq(report("Meet Aurora.")))))
	thread := w.team("Launch the Aurora lamp")
	for _, msg := range []string{"hi team", "who are our competitors?", "compare pricing and draft a tweet", "book it"} {
		w.waitReply(thread, w.say(thread, msg))
	}
	w.stop() // nothing of callon's runs while the rows are compared

	// The new master: the same answer to the greeting (a shorter one),
	// answers the competitors itself, fans out like the old one for
	// pricing, and delegates where the old one asked.
	var mu sync.Mutex
	count := map[string]int{}
	var fanIn string
	replayer := llmtest.New(t, func(req llmtest.Request) llmtest.Reply {
		msg := req.LastUser()
		mu.Lock()
		defer mu.Unlock()
		count[msg]++
		switch {
		case strings.Contains(msg, "hi team"):
			return reply("Hi!")
		case strings.Contains(msg, "competitors"):
			return reply("I'd guess Lumio.")
		case strings.Contains(msg, "compare pricing") && count[msg] == 1:
			return delegate(task{Role: "writer", Instruction: "Tweet"}, task{Role: "researcher", Instruction: "Prices"})
		case strings.Contains(msg, "compare pricing"):
			fanIn = toolResults(req)
			return reply("Lumio $49, Brightly $39; tweet: Meet Aurora.")
		case strings.Contains(msg, "book it"):
			return delegate(task{Role: "planner", Instruction: "Book something"})
		}
		return llmtest.Unexpected("no turn for %q", msg)
	})

	before := snapshot(t, w.dbURL)
	env := map[string]string{"DATABASE_URL": w.dbURL, "OPENAI_BASE_URL": replayer.URL(), "OPENAI_API_KEY": replayer.APIKey()}
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"replay", "--thread", thread, "--master-model", "other-model", "--json", "--yes"},
		func(k string) string { return env[k] }, strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatalf("callon replay: %v\n%s", err, stderr.String())
	}
	var rep eval.ReplayReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("the report is not JSON: %v\n%s", err, stdout.String())
	}
	var got []string
	for _, tr := range rep.Turns {
		got = append(got, fmt.Sprintf("%s | %s | %s | %v", tr.Message, tr.Recorded, tr.New, tr.Changed))
	}
	want := []string{
		"hi team | reply | reply | false",
		"who are our competitors? | delegate researcher → reply | reply | true",
		"compare pricing and draft a tweet | delegate researcher+writer → reply | delegate writer+researcher → reply | false",
		"book it | ask_user | delegate planner → stopped | true",
	}
	if !slices.Equal(got, want) {
		t.Errorf("turns:\n got  %q\n want %q", got, want)
	}
	if rep.Changed != 2 || rep.Calls != 5 || rep.Tokens == 0 || rep.Model != "other-model" {
		t.Errorf("summary: %d changed, %d calls, %d tokens, model %q; want 2, 5, some, other-model", rep.Changed, rep.Calls, rep.Tokens, rep.Model)
	}
	if rep.Turns[0].Recorded.Length != len("Hello! The team is here.") || rep.Turns[0].New.Length != len("Hi!") {
		t.Errorf("reply lengths %d and %d", rep.Turns[0].Recorded.Length, rep.Turns[0].New.Length)
	}
	if !strings.Contains(fanIn, "PRICES-RECORDED: Lumio $49") || !strings.Contains(fanIn, "Meet Aurora.") {
		t.Errorf("the new master's fan-in did not get the recorded results:\n%s", fanIn)
	}
	for _, r := range replayer.Requests() {
		if r.Request.Model != "other-model" {
			t.Errorf("a replay request for model %q", r.Request.Model)
		}
	}
	if after := snapshot(t, w.dbURL); !slices.Equal(before, after) {
		t.Errorf("replay changed the database:\n before %q\n after  %q", before, after)
	}

	// The table: the same turns, side by side.
	stdout.Reset()
	replayer2 := llmtest.New(t, llmtest.Always(reply("Hi!")))
	env["OPENAI_BASE_URL"], env["OPENAI_API_KEY"] = replayer2.URL(), replayer2.APIKey()
	sessions := w.sessions(w.db(), thread)
	err = run(t.Context(), []string{"replay", "--session", fmt.Sprint(sessions[0]), "--yes"}, func(k string) string { return env[k] },
		strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"who are our competitors?", "delegate researcher → reply (36)", "reply (3)", "changed", "3 of 4 turns changed"} {
		if !strings.Contains(stdout.String(), line) {
			t.Errorf("the table lacks %q:\n%s", line, stdout.String())
		}
	}
}

// snapshot is every row of every table of the database, as text.
func snapshot(t *testing.T, url string) []string {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rows, err := pool.Query(t.Context(), `SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if len(tables) < 10 {
		t.Fatalf("only %d tables", len(tables))
	}
	var out []string
	for _, table := range tables {
		var n int
		var sum string
		err := pool.QueryRow(t.Context(), fmt.Sprintf(`SELECT count(*), md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) FROM %q x`, table)).Scan(&n, &sum)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s:%d:%s", table, n, sum))
	}
	return out
}

// replay refuses what it cannot do, clearly, before any model call.
func TestReplayRefusals(t *testing.T) {
	t.Parallel()
	ai := llmtest.New(t, nil)
	env := map[string]string{"DATABASE_URL": storetest.URL(t), "OPENAI_BASE_URL": ai.URL(), "OPENAI_API_KEY": ai.APIKey()}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"replay", "--yes"}, "give exactly one of --thread ID or --session ID"},
		{[]string{"replay", "--yes", "--session", "999"}, "there is no session 999"},
		{[]string{"replay", "--yes", "--thread", "123"}, "thread 123 has had no team session"},
	} {
		var out bytes.Buffer
		err := run(t.Context(), c.args, func(k string) string { return env[k] }, strings.NewReader(""), &out, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
