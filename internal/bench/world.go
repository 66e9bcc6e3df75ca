package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/callonbot/callon/bot/discordfake"
	"github.com/callonbot/callon/internal/e2e"
	"github.com/callonbot/callon/llm/llmfake"
	"github.com/callonbot/callon/store"
)

// world is callon against a fake Discord, a fake model and a database of
// its own. The app runs in this process (start) or in processes of its
// own (spawn).
type world struct {
	b     *bench
	tb    *faults
	dc    *discordfake.Server
	ai    *llmfake.Server
	dbURL string
	drop  func(context.Context) error
	env   map[string]string

	statements atomic.Int64 // of the in-process app
	sql        *sqlLog      // its statements by text, while recording
	stop       func() error // stops the in-process app; nil when none runs
	// sigterm asks the in-process app to stop, as SIGTERM does, and
	// returns at once; stop then waits for it.
	sigterm func()
}

// newWorld makes a world whose model answers from script; env adds to or
// overrides the app's environment.
func (b *bench) newWorld(ctx context.Context, script llmfake.Script, env ...string) (*world, error) {
	url, drop, err := store.CreateScratchDatabase(ctx, b.deps.DatabaseURL, "callon_bench_")
	if err != nil {
		return nil, err
	}
	w := &world{b: b, tb: &faults{}, dbURL: url, drop: drop}
	dc, err := discordfake.Start(discordfake.WithWaitTimeout(2 * time.Minute))
	if err != nil {
		_ = drop(ctx)
		return nil, err
	}
	w.tb.Cleanup(dc.Close)
	w.dc = dc
	ai, err := llmfake.Start(script, llmfake.OnUnexpected(func(msg string) { w.tb.Errorf("%s", msg) }))
	if err != nil {
		w.tb.close()
		_ = drop(ctx)
		return nil, err
	}
	w.tb.Cleanup(ai.Close)
	w.ai = ai
	w.env = e2e.Env(w.dc, w.ai, w.dbURL)
	w.env["LOG_LEVEL"] = "warn"
	// The bench's one user sends many messages and starts many teams.
	w.env["CALLON_USER_TURNS_PER_MINUTE"] = "0"
	w.env["CALLON_MAX_USER_SESSIONS"] = "0"
	w.env["CALLON_MAX_ACTIVE_SESSIONS"] = "10000"
	for i := 0; i+1 < len(env); i += 2 {
		w.env[env[i]] = env[i+1]
	}
	return w, nil
}

// start runs callon in this process until close.
func (w *world) start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	env := maps.Clone(w.env)
	opts := []store.Option{store.WithStatementCounter(&w.statements)}
	if w.sql != nil {
		opts = append(opts, store.WithStatementLog(w.sql.add))
	}
	go func() { done <- w.b.deps.Start(ctx, env, opts...) }()
	w.sigterm = cancel
	w.stop = func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			return errors.New("callon did not stop within a minute")
		}
	}
	return w.ready(done)
}

// ready waits until a callon is connected with its commands registered,
// or done says it stopped.
func (w *world) ready(done <-chan error) error {
	var stopped error
	w.wait(func() bool {
		select {
		case err := <-done:
			stopped = fmt.Errorf("callon stopped before it was ready: %v", err)
			return true
		default:
		}
		return e2e.Ready(w.dc, "")
	}, "callon to connect and register its commands")
	return stopped
}

// close stops what runs, closes the fakes and drops the database.
func (w *world) close() error {
	var errs []error
	if w.stop != nil {
		errs = append(errs, w.stop())
		w.stop = nil
	}
	w.tb.close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs = append(errs, w.drop(ctx))
	return errors.Join(errs...)
}

// team runs /callon in #general and returns the new thread's id once the
// kickoff message is in it.
func (w *world) team(goal string) string {
	return must(e2e.Team(w.dc, goal))
}

// wait waits until cond holds; a timeout ends the stage.
func (w *world) wait(cond func() bool, what string) {
	if err := w.dc.WaitFor(cond, what); err != nil {
		w.tb.Fatalf("%v", err)
	}
}

// must returns v, or ends the stage with err (guard makes it the
// stage's error).
func must[T any](v T, err error) T {
	if err != nil {
		panic(fatal(err.Error()))
	}
	return v
}

// turn posts text in thread and waits for the bot's reply to it. It
// returns the reply's latency (from just before the message was posted
// to the reply's creation in the fake Discord) and how much of it the
// model was answering (the union of its calls' intervals in between).
func (w *world) turn(thread, text string) (latency, model time.Duration) {
	before := time.Now()
	msg := w.dc.UserMessage(thread, w.dc.UserID(), text)
	reply := w.replyTo(thread, msg, "a reply to "+text)
	return reply.Timestamp.Sub(before), modelTime(w.ai.Requests(), before, reply.Timestamp)
}

// replyTo waits for the first part of the bot's reply to msg.
func (w *world) replyTo(thread string, msg discordfake.Message, what string) discordfake.Message {
	var reply discordfake.Message
	w.wait(func() bool {
		if r := e2e.Reply(w.dc, thread, msg); len(r) > 0 {
			reply = r[0]
			return true
		}
		return false
	}, what)
	return reply
}

// modelTime is the length of the union of the intervals during which the
// model was answering a call between from and to.
func modelTime(recs []llmfake.Record, from, to time.Time) time.Duration {
	type span struct{ a, b time.Time }
	var spans []span
	for _, r := range recs {
		if r.Answered.IsZero() || r.Arrived.Before(from) || r.Answered.After(to) {
			continue
		}
		spans = append(spans, span{r.Arrived, r.Answered})
	}
	// Records are in order of arrival, so spans are sorted by start.
	var total time.Duration
	var cur span
	for i, s := range spans {
		switch {
		case i == 0:
			cur = s
		case s.a.After(cur.b):
			total += cur.b.Sub(cur.a)
			cur = s
		case s.b.After(cur.b):
			cur.b = s.b
		}
	}
	if len(spans) > 0 {
		total += cur.b.Sub(cur.a)
	}
	return total
}

// restCalls is the fake Discord's total of REST requests so far.
func (w *world) restCalls() int {
	n := 0
	for _, c := range w.dc.AllCalls() {
		n += c
	}
	return n
}

// sqlLog counts statements by their text while recording.
type sqlLog struct {
	mu        sync.Mutex
	recording bool
	counts    map[string]int
}

func (l *sqlLog) add(sql string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.recording {
		l.counts[shortSQL(sql)]++
	}
}

// record starts counting afresh.
func (l *sqlLog) record() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recording, l.counts = true, map[string]int{}
}

// stop ends the recording and returns the statements sent per sample,
// most frequent first.
func (l *sqlLog) stop(samples int) []Statement {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recording = false
	out := make([]Statement, 0, len(l.counts))
	for q, n := range l.counts {
		out = append(out, Statement{SQL: q, PerTurn: float64(n) / float64(max(samples, 1))})
	}
	slices.SortFunc(out, func(a, b Statement) int {
		return cmp.Or(cmp.Compare(b.PerTurn, a.PerTurn), strings.Compare(a.SQL, b.SQL))
	})
	return out
}

// shortSQL is a statement's text with its whitespace collapsed, cut to
// what tells it apart.
func shortSQL(sql string) string {
	s := strings.Join(strings.Fields(sql), " ")
	if r := []rune(s); len(r) > 110 {
		s = string(r[:110]) + "…"
	}
	return s
}
