package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/chromedp"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/internal/golden"
)

// chromiumInstall is what to run when the browser tests find no browser.
const chromiumInstall = "apt-get install -y chromium"

// chromium finds Debian's Chromium (CALLON_TEST_CHROMIUM names another
// binary). A missing browser fails the test: it never skips.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CALLON_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("Chromium is missing: the dashboard's browser tests need it. Install it (%s), or name a Chromium binary in CALLON_TEST_CHROMIUM.", chromiumInstall)
	return ""
}

// browser is a headless Chromium with a fresh profile, closed when the
// test ends.
type browser struct {
	t   *testing.T
	ctx context.Context // the first tab's
	dir string          // where screenshots go (the test's artifacts)

	mu         sync.Mutex
	violations []string // what the CSP blocked
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, dir: t.ArtifactDir()}
	t.Logf("screenshots go to %s", b.dir)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	// Whatever the page's Content-Security-Policy blocks (an inline
	// script or style a library slipped in) is logged by the browser:
	// it fails the test.
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*cdplog.EventEntryAdded); ok && e.Entry != nil && strings.Contains(e.Entry.Text, "Content Security Policy") {
			b.mu.Lock()
			b.violations = append(b.violations, e.Entry.Text)
			b.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, v := range b.violations {
			t.Errorf("the browser blocked something under the CSP: %s", v)
		}
	})
	return b
}

// tab is a browser's page.
type tab struct {
	b   *browser
	ctx context.Context
}

// tab returns the browser's tab.
func (b *browser) tab() tab { return tab{b, b.ctx} }

// do runs steps within 30 s.
func (tb tab) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.b.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
		tb.b.t.Fatalf("%s: %v", what, err)
	}
}

// waitText waits until the page's text contains s (checked every 50 ms
// for at most 30 s; a page being replaced by a navigation is looked at
// again once it is there).
func (tb tab) waitText(what, s string) {
	tb.b.t.Helper()
	q, _ := json.Marshal(s)
	expr := "!!document.body && document.body.innerText.includes(" + string(q) + ")"
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(tb.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			tb.shot("failed-" + strings.ReplaceAll(what, " ", "-"))
			tb.b.t.Fatalf("%s: the page never showed %q (last error: %v)", what, s, err)
		}
		select {
		case <-tb.ctx.Done():
			tb.b.t.Fatalf("%s: the browser went away", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// text is the page's visible text.
func (tb tab) text() string {
	tb.b.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
	if err != nil {
		tb.b.t.Fatal(err)
	}
	return s
}

// jsEval evaluates a JavaScript expression.
func jsEval[T any](tb tab, expr string) T {
	tb.b.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.b.t.Fatal(err)
	}
	return v
}

// shot saves a full-page PNG as a test artifact, and with -update as the
// docs' screenshot docs/screenshots/<docs>.png too.
func (tb tab) shot(name string, docs ...string) {
	tb.b.t.Helper()
	ctx, cancel := context.WithTimeout(tb.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		tb.b.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(tb.b.dir, name+".png"), png, 0o644); err != nil {
		tb.b.t.Error(err)
	}
	if len(docs) > 0 && golden.Updating() {
		path := filepath.Join("..", "..", "docs", "screenshots", docs[0]+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			tb.b.t.Error(err)
		}
	}
}

// startTeamIn runs /callon in a channel and returns the new thread.
func (w *world) startTeamIn(channelID, goal string) string {
	w.t.Helper()
	before := len(w.dc.Threads(channelID))
	ix := w.dc.SlashCommand(w.t, discordtest.SlashCommand{Name: "callon", ChannelID: channelID,
		Options: []discordtest.CommandOption{discordtest.StringOption("goal", goal)}})
	w.dc.WaitFor(w.t, func() bool {
		m, ok := ix.Original()
		return ok && strings.Contains(m.Content, "is ready in")
	}, "/callon to answer with the thread")
	threads := w.dc.Threads(channelID)
	if len(threads) != before+1 {
		w.t.Fatalf("got %d threads, want %d", len(threads), before+1)
	}
	return threads[len(threads)-1].ID
}

// sessionOf is the id of a thread's (only) session.
func (w *world) sessionOf(thread string) int64 {
	w.t.Helper()
	ids := w.sessions(w.db(), thread)
	if len(ids) != 1 {
		w.t.Fatalf("thread %s has %d sessions, want 1", thread, len(ids))
	}
	return ids[0]
}

// base is the dashboard's address in the browser: localhost, a secure
// context, so the Secure cookie holds over plain HTTP in the test.
func base(addr string) string {
	_, port, _ := strings.Cut(addr, ":")
	return fmt.Sprintf("http://localhost:%s", port)
}
