package terminal

import (
	"context"
	"errors"
	"strings"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/lipgloss"

	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/master"
)

// A message counts as sent only once the UI took it; once the terminal
// is closed, messages fail so that the outbox keeps them.
func TestMessengerHandsOver(t *testing.T) {
	t.Parallel()
	m := NewMessenger()
	sent := make(chan error, 1)
	go func() {
		_, err := m.Send(context.Background(), master.OutMessage{ID: 1, Kind: master.OutReply, TurnID: 7, Content: "hi", Nonce: "n1"})
		sent <- err
	}()
	ev := <-m.Events()
	if err := <-sent; err != nil || ev.Kind != Said || ev.Turn != 7 || ev.Text != "hi" {
		t.Fatalf("event %+v, send %v", ev, err)
	}
	go func() {
		_, err := m.Send(context.Background(), master.OutMessage{ID: 2, Kind: master.OutApproval, SessionID: 1, Content: "ask",
			Nonce: "n2", Buttons: master.ApprovalButtons(12)})
		sent <- err
	}()
	ev = <-m.Events()
	if err := <-sent; err != nil || ev.Kind != Asked || ev.Approval != 12 {
		t.Fatalf("approval event %+v, send %v", ev, err)
	}
	edited := make(chan error, 1)
	go func() { edited <- m.Edit(context.Background(), "", ev.ID, "✅ Approved") }()
	if got := <-m.Events(); got.Kind != Settled || got.Approval != 12 || got.Text != "✅ Approved" {
		t.Errorf("the edit of a request is %+v, want it Settled", got)
	}
	if err := <-edited; err != nil {
		t.Error(err)
	}
	if err := m.Edit(context.Background(), "", "m-unknown", "x"); err != nil {
		t.Errorf("editing a message an earlier chat showed: %v, want nil (nothing here shows it)", err)
	}
	go func() {
		_, err := m.Send(context.Background(), master.OutMessage{ID: 3, Kind: master.OutNotice, TurnID: 7, Content: "⏳ Team at work", Nonce: "n3"})
		sent <- err
	}()
	if got := <-m.Events(); got.Kind != Status {
		t.Errorf("a turn's notice is %+v, want a Status", got)
	}
	<-sent
	go func() {
		_, err := m.Send(context.Background(), master.OutMessage{ID: 4, Kind: master.OutReply, Content: "late", Nonce: "n4"})
		sent <- err
	}()
	m.Close()
	if err := <-sent; !errors.Is(err, ErrClosed) {
		t.Errorf("a message nobody took before Close: %v, want ErrClosed", err)
	}
}

// Nothing a model writes reaches the terminal as an escape sequence: the
// UI's Markdown, its live blocks and its prompts show it as text.
func TestModelShowsNoEscapesFromText(t *testing.T) {
	t.Parallel()
	evil := "Hi \x1b]0;pwned\x07\x1b[2J\x1b[31mred\r\u202eevil **bold**"
	mdl := newModel(context.Background(), nil, NewMessenger(), Options{}, lipgloss.NewRenderer(&strings.Builder{}))
	mdl.event(Event{Kind: Said, Out: master.OutReply, Text: evil})
	mdl.event(Event{Kind: Status, ID: "s", Text: "⏳ " + evil})
	mdl.event(Event{Kind: Asked, ID: "a", Approval: 3, Text: "🔐 " + evil})
	out := strings.Join(mdl.queue, "\n") + mdl.View()
	for _, bad := range []string{"\x1b]", "\x1b[2J", "\x1b[31m", "\r", "\u202e", "\x07"} {
		if strings.Contains(out, bad) {
			t.Errorf("the terminal would get %q from a model's text:\n%q", bad, out)
		}
	}
	if !strings.Contains(out, "pwned") || !strings.Contains(out, "evil") {
		t.Errorf("the text itself should show:\n%q", out)
	}
}

// An approval request whose arguments were too long for its message
// attaches them; a terminal shows them whole, in the request.
func TestMessengerShowsAttachedArguments(t *testing.T) {
	t.Parallel()
	m := NewMessenger()
	sent := make(chan error, 1)
	go func() {
		_, err := m.Send(context.Background(), master.OutMessage{ID: 1, Kind: master.OutApproval, SessionID: 1, Content: "ask",
			Nonce: "n1", Buttons: master.ApprovalButtons(3),
			File: master.File{Name: render.ArgsFileName, Data: []byte("{\n  \"path\": \"/home/callon/.ssh/authorized_keys\"\n}\n")}})
		sent <- err
	}()
	ev := <-m.Events()
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ev.Text, render.ArgsFileName) || !strings.Contains(ev.Text, `"path": "/home/callon/.ssh/authorized_keys"`) {
		t.Errorf("the request shows %q, want the attached arguments in it", ev.Text)
	}
}

// A request for approval is printed whole when it comes, every argument
// above the prompt that asks for the decision; once decided, only its
// outcome is added.
func TestModelShowsTheWholeRequestBeforeTheDecision(t *testing.T) {
	t.Parallel()
	mdl := newModel(context.Background(), nil, NewMessenger(), Options{}, lipgloss.NewRenderer(&strings.Builder{}))
	mdl.printing = true // a print in flight: what the model prints waits in its queue
	asked := "🔐 **engineer** asks to call `ops.write` with:\n```json\n{\n  \"path\": \"/srv/notes/pricing.md\",\n  \"mode\": \"overwrite\"\n}\n```\nThe task waits."
	mdl.event(Event{Kind: Asked, ID: "a", Approval: 4, Text: asked})
	before := strings.Join(mdl.queue, "\n")
	for _, want := range []string{"/srv/notes/pricing.md", "overwrite"} {
		if !strings.Contains(before, want) {
			t.Errorf("before the decision the terminal shows:\n%s\nwant %q in it", before, want)
		}
	}
	if view := mdl.View(); !strings.Contains(view, "Request 4") {
		t.Errorf("the prompt is:\n%s\nwant Request 4 waiting", view)
	}
	settled := strings.Replace(asked, "The task waits.", "✅ Approved by you just now: the call is made.", 1)
	mdl.event(Event{Kind: Settled, ID: "a", Approval: 4, Text: settled})
	after := strings.TrimPrefix(strings.Join(mdl.queue, "\n"), before)
	if !strings.Contains(after, "Approved by you") || strings.Contains(after, "pricing.md") {
		t.Errorf("once decided the terminal adds:\n%s\nwant the outcome alone", after)
	}
	if view := mdl.View(); strings.Contains(view, "Request 4") {
		t.Errorf("a decided request still waits:\n%s", view)
	}
}

// A note under the input (/help, an error) wraps to the terminal's width
// instead of running off its edge.
func TestModelWrapsItsNote(t *testing.T) {
	t.Parallel()
	mdl := newModel(context.Background(), nil, NewMessenger(), Options{}, lipgloss.NewRenderer(&strings.Builder{}))
	mdl.setWidth(40)
	mdl.note = Help
	view := mdl.View()
	for _, line := range strings.Split(view, "\n") {
		if w := lipgloss.Width(line); w > 40 {
			t.Errorf("a line of %d columns in a 40-column terminal: %q", w, line)
		}
	}
	if flat := strings.Join(strings.Fields(view), " "); !strings.Contains(flat, "decide a request") {
		t.Errorf("the help lost words:\n%s", view)
	}
}

// A request that arrives while a person types does not take their next
// letters as its decision: y and n go into the message until Tab, which
// the request's box offers, switches to deciding.
func TestModelDecidesOnlyAfterTab(t *testing.T) {
	t.Parallel()
	mdl := newModel(context.Background(), nil, NewMessenger(), Options{}, lipgloss.NewRenderer(&strings.Builder{}))
	mdl.event(Event{Kind: Asked, ID: "a", Approval: 4, Text: "🔐 **engineer** asks to call `ops.write`.\nThe task waits."})
	for _, r := range "yes" {
		mdl.key(tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune{r}})
	}
	if mdl.mode != typing || mdl.input.Value() != "yes" {
		t.Fatalf("after typing yes: mode %v, input %q; want still typing, the letters in the message", mdl.mode, mdl.input.Value())
	}
	if view := mdl.View(); !strings.Contains(view, "Tab, then y or n") {
		t.Errorf("the request's box does not say how to decide:\n%s", view)
	}
	mdl.key(tea.KeyMsg{Type: tea.KeyTab})
	if mdl.mode != approving {
		t.Fatalf("after Tab: mode %v, want deciding", mdl.mode)
	}
}

// The messenger keeps only what will be edited (a status until it
// settles, a request until it is decided): a chat that runs for days
// does not hold every message it showed.
func TestMessengerKeepsOnlyWhatIsEdited(t *testing.T) {
	t.Parallel()
	m := NewMessenger()
	defer m.Close()
	go func() {
		for range m.Events() {
		}
	}()
	ctx := t.Context()
	if _, err := m.Send(ctx, master.OutMessage{Kind: master.OutReply, Content: "hello"}); err != nil {
		t.Fatal(err)
	}
	asked, err := m.Send(ctx, master.OutMessage{Kind: master.OutApproval, Content: "🔐 **engineer** asks to call `x`.\nThe task waits."})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(m.posted); n != 1 {
		t.Errorf("after a reply and a request: %d kept, want the request alone", n)
	}
	if err := m.Edit(ctx, "", asked, "🔐 decided\n✅ Approved by you just now."); err != nil {
		t.Fatal(err)
	}
	if n := len(m.posted); n != 0 {
		t.Errorf("after the request was decided: %d kept, want none", n)
	}
}

// A frame renders the live texts once: the next frames, at every key and
// cursor blink, reuse them until they change or the width does.
func TestViewRendersLiveTextsOnce(t *testing.T) {
	t.Parallel()
	mdl := newModel(context.Background(), nil, NewMessenger(), Options{}, lipgloss.NewRenderer(&strings.Builder{}))
	mdl.setWidth(60)
	mdl.event(Event{Kind: Status, ID: "s", Text: "⏳ **Team at work** · round 1"})
	first := mdl.View()
	if len(mdl.memo) != 1 || mdl.View() != first {
		t.Fatalf("after two frames %d texts kept, want the status alone, and the same frame", len(mdl.memo))
	}
	mdl.setWidth(80)
	if len(mdl.memo) != 0 {
		t.Error("a new width kept texts rendered for the old one")
	}
}
