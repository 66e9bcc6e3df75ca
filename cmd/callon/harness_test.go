package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/internal/e2e"
	"github.com/callonbot/callon/llm/llmtest"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/store/storetest"
)

func TestMain(m *testing.M) {
	if os.Getenv(asCallon) == "1" {
		main() // this binary, re-executed by spawn, is a callon process
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "callon-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	mcpServerBin = filepath.Join(dir, "mcptestserver")
	build := exec.Command("go", "build", "-o", mcpServerBin, "github.com/callonbot/callon/tools/mcptest/cmd/mcptestserver")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build mcptestserver: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	storetest.Main(m, func() { os.RemoveAll(dir) })
}

// mcpServerBin is the mcptestserver binary, an MCP server over stdio
// built once by TestMain.
var mcpServerBin string

// asCallon makes the test binary run callon's main instead of the tests.
const asCallon = "CALLON_TEST_AS_CALLON"

// world is callon running through run, against a fake Discord, a fake
// OpenAI-compatible server and a fresh Postgres database of its own.
type world struct {
	t     *testing.T
	dc    *discordtest.Server
	ai    *llmtest.Server
	dbURL string
	env   map[string]string
	st    *store.Store  // opened on first use by db
	pool  *pgxpool.Pool // opened on first use by count
	logs  *logBook      // every log line of every process of the world

	stop func() // stops the running process and waits for it
	// sigterm asks the running process to stop, as SIGTERM does, and
	// returns at once; stop then waits for it.
	sigterm func()
}

// setup starts callon with the model answering from script. env adds or
// overrides variables.
func setup(t *testing.T, script llmtest.Script, env ...string) *world {
	t.Helper()
	return setupWith(t, discordtest.New(t), script, env...)
}

// setupWith is setup with a fake Discord the test made itself.
func setupWith(t *testing.T, dc *discordtest.Server, script llmtest.Script, env ...string) *world {
	t.Helper()
	w := newWorld(t, dc, script, env...)
	w.start()
	return w
}

// newWorld is setupWith without starting callon.
func newWorld(t *testing.T, dc *discordtest.Server, script llmtest.Script, env ...string) *world {
	t.Helper()
	w := &world{t: t, dc: dc, ai: llmtest.New(t, script), dbURL: storetest.URL(t), logs: &logBook{}}
	w.env = e2e.Env(w.dc.Server, w.ai.Server, w.dbURL)
	maps.Copy(w.env, map[string]string{
		"CALLON_TASK_LEASE":       "3s",
		"CALLON_SWEEP_INTERVAL":   "1s",
		"CALLON_CONCURRENT_TASKS": "4",
		"LOG_LEVEL":               "debug",
	})
	for i := 0; i+1 < len(env); i += 2 {
		w.env[env[i]] = env[i+1]
	}
	w.stop, w.sigterm = func() {}, func() {}
	return w
}

// start runs callon until the test ends or stop is called.
func (w *world) start() {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &testLog{t: w.t, book: w.logs}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, func(k string) string { return w.env[k] }, strings.NewReader(""), logs, logs)
	}()
	var once sync.Once
	w.sigterm = cancel
	w.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					w.t.Errorf("run returned %v, want nil after a graceful stop", err)
				}
			case <-time.After(30 * time.Second):
				w.t.Errorf("run did not return within 30 s of being stopped")
			}
			logs.close()
		})
	}
	w.t.Cleanup(w.stop)
	w.dc.WaitConnected(w.t)
	// Commands go to DISCORD_GUILD_ID when it is set, else globally.
	w.dc.WaitFor(w.t, func() bool { return len(w.dc.Commands(w.env["DISCORD_GUILD_ID"])) == commandCount }, "the slash commands registered")
}

// commandCount is how many slash commands callon registers.
const commandCount = e2e.CommandCount

// restart stops the process and starts a new one on the same database.
func (w *world) restart() {
	w.t.Helper()
	w.stop()
	w.start()
}

// team runs /callon in #general and returns the new thread's id once the
// kickoff message is in it.
func (w *world) team(goal string) string {
	w.t.Helper()
	thread, err := e2e.Team(w.dc.Server, goal)
	if err != nil {
		w.t.Fatal(err)
	}
	return thread
}

// say posts a message from the default user in a channel.
func (w *world) say(channelID, text string) discordtest.Message {
	return w.dc.UserMessage(channelID, w.dc.UserID(), text)
}

// botMessages lists what the bot posted in a channel.
func (w *world) botMessages(channelID string) []discordtest.Message {
	return e2e.BotMessages(w.dc.Server, channelID)
}

// reply lists the bot's messages that reply to msg (e2e.Reply).
func (w *world) reply(channelID string, msg discordtest.Message) []discordtest.Message {
	return e2e.Reply(w.dc.Server, channelID, msg)
}

func isStatus(m discordtest.Message) bool { return e2e.IsStatus(m) }

// waitReply waits for the bot's reply to msg and returns its text.
func (w *world) waitReply(channelID string, msg discordtest.Message) string {
	w.t.Helper()
	w.dc.WaitFor(w.t, func() bool { return len(w.reply(channelID, msg)) > 0 }, "a reply to "+msg.Content)
	var parts []string
	for _, m := range w.reply(channelID, msg) {
		parts = append(parts, m.Content)
	}
	return strings.Join(parts, "\n")
}

// testLog sends the process's log lines to the test log until closed.
type testLog struct {
	t      *testing.T
	book   *logBook // nil: lines are not kept
	mu     sync.Mutex
	buf    bytes.Buffer
	closed bool
}

// logBook keeps log lines for assertions.
type logBook struct {
	mu    sync.Mutex
	lines []string
}

// logged reports whether a kept line contains every one of parts.
func (w *world) logged(parts ...string) bool {
	w.logs.mu.Lock()
	defer w.logs.mu.Unlock()
	for _, l := range w.logs.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return len(p), nil
	}
	l.buf.Write(p)
	for {
		line, err := l.buf.ReadString('\n')
		if err != nil {
			l.buf.WriteString(line)
			break
		}
		l.t.Log(strings.TrimRight(line, "\n"))
		if l.book != nil {
			l.book.mu.Lock()
			l.book.lines = append(l.book.lines, line)
			l.book.mu.Unlock()
		}
	}
	return len(p), nil
}

func (l *testLog) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// signals returns a thread's session signals as "KIND payload" lines.
func (w *world) signals(threadID string) []string {
	w.t.Helper()
	st := w.db()
	var out []string
	for _, sess := range w.sessions(st, threadID) {
		sigs, err := st.Signals(w.t.Context(), sess, 0, 1000)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, s := range sigs {
			var compact bytes.Buffer
			if err := json.Compact(&compact, s.Payload); err != nil {
				w.t.Fatal(err)
			}
			out = append(out, string(s.Kind)+" "+compact.String())
		}
	}
	return out
}

// db is a store on the world's database, for assertions.
func (w *world) db() *store.Store {
	w.t.Helper()
	if w.st == nil {
		st, err := store.Open(w.t.Context(), w.dbURL, nil)
		if err != nil {
			w.t.Fatal(err)
		}
		w.st = st
		w.t.Cleanup(st.Close)
	}
	return w.st
}

// sessions lists the ids of the sessions a thread has had.
func (w *world) sessions(st *store.Store, threadID string) []int64 {
	w.t.Helper()
	ids, err := st.ThreadSessions(w.t.Context(), threadID)
	if err != nil {
		w.t.Fatal(err)
	}
	return ids
}

func hasSignal(sigs []string, kind, payloadPart string) bool {
	for _, s := range sigs {
		if strings.HasPrefix(s, kind+" ") && strings.Contains(s, payloadPart) {
			return true
		}
	}
	return false
}

// startWorker runs `callon worker` on the world's database; the returned
// function stops it and waits.
func (w *world) startWorker() func() {
	w.t.Helper()
	env := maps.Clone(w.env)
	env["CALLON_CONCURRENT_TASKS"] = "2"
	ctx, cancel := context.WithCancel(context.Background())
	logs := &testLog{t: w.t}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"worker"}, func(k string) string { return env[k] }, strings.NewReader(""), logs, logs)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				w.t.Errorf("callon worker returned %v", err)
			}
			logs.close()
		})
	}
	w.t.Cleanup(stop)
	return stop
}
