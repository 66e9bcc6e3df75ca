package main

import (
	"bytes"
	"context"
	"io"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/llm/llmtest"
)

// surfaceScript answers as the model each request was made for: a
// master hands the message to the researcher, then replies naming its
// own model and the worker's result; a worker reports naming its model.
// So a reply tells which process ran its turn and its task.
func surfaceScript() llmtest.Script {
	return llmtest.Switch(
		llmtest.Match(masterPrompt, func(r llmtest.Request) llmtest.Reply {
			if results := toolResults(r); strings.Contains(results, " did ") {
				return reply(r.Model + " merged: " + strings.TrimSpace(results))
			}
			return delegate(task{Role: "researcher", Instruction: "look into: " + r.LastUser()})
		}),
		llmtest.Match("You are the researcher", func(r llmtest.Request) llmtest.Reply {
			return report(r.Model + " did " + r.LastUser())
		}))
}

// answeredBy reports whether text holds the answer to message by the
// master and the worker of process name (see surfaceScript).
func answeredBy(text, name, message string) bool {
	i := strings.Index(text, "master-"+name+" merged:")
	j := strings.Index(text, "worker-"+name+" did look into:")
	k := strings.LastIndex(text, message)
	return i >= 0 && i < j && j < k
}

// watched is an output that tests can wait on.
type watched struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func newWatched() *watched { return &watched{changed: make(chan struct{})} }

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	close(w.changed)
	w.changed = make(chan struct{})
	return w.b.Write(p)
}

func (w *watched) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor waits until the output contains s; it fails the test when
// ended says the process ended first.
func (w *watched) waitFor(t *testing.T, s string, ended <-chan error) {
	t.Helper()
	deadline := time.NewTimer(30 * time.Second)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		got, changed := w.b.String(), w.changed
		w.mu.Unlock()
		if strings.Contains(got, s) {
			return
		}
		select {
		case <-changed:
		case err := <-ended:
			t.Fatalf("the process ended (%v) before it printed %q; the output is:\n%s", err, s, got)
		case <-deadline.C:
			t.Fatalf("waited 30 s for %q; the output is:\n%s", s, got)
		}
	}
}

// chatProc is a `callon chat` running through run, its input a pipe.
type chatProc struct {
	in   *io.PipeWriter
	out  *watched
	done chan error
}

// startChat runs callon chat with args in env until the test ends or
// its input is closed.
func startChat(t *testing.T, env map[string]string, args ...string) *chatProc {
	t.Helper()
	r, w := io.Pipe()
	c := &chatProc{in: w, out: newWatched(), done: make(chan error, 1)}
	logs := &testLog{t: t}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		c.done <- run(ctx, append([]string{"chat"}, args...), func(k string) string { return env[k] }, r, c.out, logs)
	}()
	t.Cleanup(func() {
		w.Close()
		select {
		case <-c.done:
		case <-time.After(30 * time.Second):
			t.Errorf("callon chat did not end within 30 s of its input closing")
		}
		cancel()
		logs.close()
	})
	return c
}

// waitFor waits until the chat printed s.
func (c *chatProc) waitFor(t *testing.T, s string) {
	t.Helper()
	c.out.waitFor(t, s, c.done)
}

// say types a line into the chat.
func (c *chatProc) say(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// A bot and two chats on one database: each takes only its own work. Every
// message is answered where it was posted, exactly once, by the master and
// the worker of the process that shows it (each process has models of its
// own, which the answers name).
func TestSurfacesShareOneDatabase(t *testing.T) {
	t.Parallel()
	w := setup(t, surfaceScript(), "CALLON_MASTER_MODEL", "master-bot", "CALLON_WORKER_MODEL", "worker-bot")
	thread := w.team("Discord things")
	// The chats' model server lists their models (they check at start);
	// it answers as the bot's does.
	ai := llmtest.New(t, surfaceScript(), llmtest.WithModels("master-a", "worker-a", "master-b", "worker-b"))
	chats := map[string]*chatProc{}
	for _, name := range []string{"a", "b"} {
		env := maps.Clone(w.env)
		delete(env, "DISCORD_TOKEN")
		env["OPENAI_BASE_URL"], env["OPENAI_API_KEY"] = ai.URL(), ai.APIKey()
		env["CALLON_MASTER_MODEL"], env["CALLON_WORKER_MODEL"] = "master-"+name, "worker-"+name
		env["LOG_LEVEL"] = "warn"
		chats[name] = startChat(t, env, "--goal", "Chat "+name+" things")
		chats[name].waitFor(t, "Team assembled")
	}
	// Everything at once: three masters and three workers may claim.
	msg := w.say(thread, "from discord")
	for name, c := range chats {
		c.say(t, "from chat "+name)
	}

	if got := w.waitReply(thread, msg); !answeredBy(got, "bot", "from discord") {
		t.Errorf("the Discord thread's reply is %q, want master-bot's merge of worker-bot's work on it", got)
	}
	for name, c := range chats {
		c.waitFor(t, "from chat "+name+"\n")
		if got := c.out.String(); !answeredBy(got, name, "from chat "+name) {
			t.Errorf("chat %s printed\n%s\nwant master-%s's merge of worker-%s's work on its message", name, got, name, name)
		}
	}
	for name, c := range chats {
		c.say(t, "/dissolve")
		c.waitFor(t, "Team dissolved")
		got := c.out.String()
		if n := strings.Count(got, "Team assembled"); n != 1 {
			t.Errorf("chat %s printed %d kickoffs, want its own only:\n%s", name, n, got)
		}
		if n := strings.Count(got, "merged:"); n != 1 {
			t.Errorf("chat %s printed %d replies, want its own only:\n%s", name, n, got)
		}
		for _, other := range []string{"from discord", "Discord things", "from chat " + map[string]string{"a": "b", "b": "a"}[name]} {
			if strings.Contains(got, other) {
				t.Errorf("chat %s printed %q, another surface's:\n%s", name, other, got)
			}
		}
	}
	var replies int
	for _, m := range w.botMessages(thread) {
		if strings.Contains(m.Content, "from chat") || strings.Contains(m.Content, "Chat ") {
			t.Errorf("the Discord thread got a chat's message: %q", m.Content)
		}
		if strings.Contains(m.Content, "merged:") {
			replies++
		}
	}
	if replies != 1 {
		t.Errorf("the Discord thread got %d replies, want 1", replies)
	}
}
