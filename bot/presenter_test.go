package bot

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// statusFake is a StatusStore and a Messenger that log what the
// presenter did.
type statusFake struct {
	turns []master.TurnStatus
	log   []string
}

func (f *statusFake) note(format string, args ...any) {
	f.log = append(f.log, fmt.Sprintf(format, args...))
}
func (f *statusFake) ActiveTurns(context.Context, master.Scope) ([]master.TurnStatus, error) {
	return f.turns, nil
}
func (f *statusFake) SetStatusMessage(_ context.Context, turnID int64, messageID string) error {
	f.note("set %d %s", turnID, messageID)
	f.turns[0].Turn.StatusMessageID = messageID
	return nil
}
func (f *statusFake) SettleStatus(_ context.Context, turnID int64) error {
	f.note("settled %d", turnID)
	f.turns = nil
	return nil
}
func (f *statusFake) Send(_ context.Context, m master.OutMessage) (string, error) {
	f.note("post %s: %s", m.Nonce, firstLine(m.Content))
	return "s1", nil
}
func (f *statusFake) Find(context.Context, master.OutMessage) (string, error) { return "", nil }
func (f *statusFake) Edit(_ context.Context, _, messageID, content string) error {
	f.note("edit %s: %s", messageID, firstLine(content))
	return nil
}
func (f *statusFake) Typing(context.Context, string) error {
	f.note("typing")
	return nil
}
func (f *statusFake) Archive(context.Context, string) error { return nil }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// The presenter shows typing while a turn runs, one status message for
// a turn with subtasks, edits it at most every MinEdit and only when it
// changed, and settles it once the reply is out.
func TestPresenterShow(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	now := start
	f := &statusFake{}
	p := NewPresenter(PresenterConfig{MinEdit: 2 * time.Second, TypingEvery: 8 * time.Second, Now: func() time.Time { return now }},
		f, f, slog.New(slog.DiscardHandler))
	ts := master.TurnStatus{Turn: master.Turn{ID: 9, SessionID: 1, State: master.TurnRunning, Round: 1}, ThreadID: "th", StartedAt: start,
		Tasks: []master.Task{{ID: 1, Round: 1, Role: "planner", State: master.TaskRunning, StartedAt: start}}}
	f.turns = []master.TurnStatus{ts}
	step := func(d time.Duration) {
		now = now.Add(d)
		p.tick(t.Context())
	}
	step(0)
	step(time.Second)                           // nothing changed that shows
	f.turns[0].Tasks[0].State = master.TaskDone // changed, but too soon to edit
	f.turns[0].Tasks[0].EndedAt = start.Add(time.Second)
	step(500 * time.Millisecond)
	step(2 * time.Second) // now it may
	f.turns[0].Turn.State = master.TurnDone
	f.turns[0].Turn.UpdatedAt = now
	step(time.Second) // ended, reply not out yet: not settled
	f.turns[0].RepliedAt = now
	step(time.Second)
	want := []string{
		"typing",
		"post st9: ⏳ **Team at work** · round 1 · 0 s",
		"set 9 s1",
		"edit s1: ⏳ **Team at work** · round 1 · 4 s",
		"edit s1: ✅ Done in 5 s · 1 task by planner",
		"settled 9",
	}
	if strings.Join(f.log, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n  %s\nwant:\n  %s", strings.Join(f.log, "\n  "), strings.Join(want, "\n  "))
	}
}

// A turn answered directly shows only the typing indicator.
func TestPresenterDirectAnswerHasNoStatusMessage(t *testing.T) {
	t.Parallel()
	f := &statusFake{turns: []master.TurnStatus{{Turn: master.Turn{ID: 3, State: master.TurnRunning}, ThreadID: "th", StartedAt: time.Now()}}}
	p := NewPresenter(PresenterConfig{}, f, f, slog.New(slog.DiscardHandler))
	p.tick(t.Context())
	if strings.Join(f.log, ",") != "typing" {
		t.Errorf("got %v, want only the typing indicator", f.log)
	}
}
