package terminal

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/master"
)

// EventKind is what happened in the team's "thread".
type EventKind int

// Event kinds.
const (
	// Said: the team posted a message (kickoff, reply, question, notice,
	// summary).
	Said EventKind = iota + 1
	// Status: a turn's status message was posted or changed.
	Status
	// Asked: a call of a tool waits for a person's approval.
	Asked
	// Settled: an approval request shows its outcome (decided here or
	// elsewhere, expired or cancelled).
	Settled
	// Logged: a log line, shown when the chat is verbose.
	Logged
)

// Event is one thing to show.
type Event struct {
	Kind     EventKind
	Out      master.OutKind // Said: what the message is
	Turn     int64          // the turn it belongs to; 0 for none
	ID       string         // the message's id (Status, Asked, Settled)
	Approval int64          // Asked, Settled: the request's id
	Text     string         // as the team wrote it: Discord markup, not cleaned
	// From is the member a part of a reply is posted as (personas): its
	// name prefixes the text; "" for the team's own voice.
	From string
	// Part is the message's place in its reply (0: the first); the
	// answer a script waits for is the first.
	Part int
}

// ErrClosed is what the team's messages get once the terminal shows
// nothing more: the outbox keeps them for the next chat that shows the
// team (callon chat --resume).
var ErrClosed = errors.New("the terminal is closed")

// Messenger is master.Messenger for a terminal: each message becomes an
// Event, and a message counts as sent only once the UI has taken its
// event (Events), so none is marked sent that nobody was shown.
type Messenger struct {
	events    chan Event
	logs      chan string
	done      chan struct{}
	closeOnce sync.Once

	mu     sync.Mutex
	posted map[string]Event // statuses and requests not settled yet, by message id, for their edits
}

var _ master.Messenger = (*Messenger)(nil)

// maxLogLines bounds the log lines waiting to be shown; beyond it they
// are dropped (they are in no file either: --verbose chose the chat).
const maxLogLines = 256

// NewMessenger returns a Messenger whose messages wait until a UI takes
// them from Events.
func NewMessenger() *Messenger {
	return &Messenger{events: make(chan Event), logs: make(chan string, maxLogLines), done: make(chan struct{}), posted: map[string]Event{}}
}

// Events delivers the team's messages, one at a time, in order.
func (m *Messenger) Events() <-chan Event { return m.events }

// Logs delivers log lines (a verbose chat's).
func (m *Messenger) Logs() <-chan string { return m.logs }

// Done is closed by Close.
func (m *Messenger) Done() <-chan struct{} { return m.done }

// Close makes every message not taken yet, and every later one, fail
// with ErrClosed.
func (m *Messenger) Close() { m.closeOnce.Do(func() { close(m.done) }) }

// Log queues a log line to show; it never blocks.
func (m *Messenger) Log(line string) {
	select {
	case m.logs <- line:
	default:
	}
}

// emit waits until the UI takes ev.
func (m *Messenger) emit(ctx context.Context, ev Event) error {
	select {
	case <-m.done:
		return ErrClosed
	default:
	}
	select {
	case m.events <- ev:
		return nil
	case <-m.done:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Send shows a message of the team.
func (m *Messenger) Send(ctx context.Context, out master.OutMessage) (string, error) {
	id := "m" + strconv.FormatInt(out.ID, 10) + "-" + out.Nonce
	ev := Event{Kind: Said, Out: out.Kind, Turn: out.TurnID, ID: id, Text: out.Content, Part: out.Part}
	if out.Persona != nil {
		ev.From = out.Persona.Name
	}
	if out.File.Name != "" {
		// Discord shows the file as an attachment; a terminal shows it
		// whole (an approval's every argument, so the person sees what
		// they decide on).
		ev.Text += "\n\n" + out.File.Name + ":\n```\n" + strings.TrimRight(string(out.File.Data), "\n") + "\n```"
	}
	switch {
	case out.Kind == master.OutApproval:
		ev.Kind = Asked
		for _, b := range out.Buttons {
			if n, ok := strings.CutPrefix(b.CustomID, master.ApprovePrefix); ok {
				ev.Approval, _ = strconv.ParseInt(n, 10, 64)
			}
		}
	case out.Kind == master.OutNotice && out.TurnID != 0:
		ev.Kind = Status
	}
	if err := m.emit(ctx, ev); err != nil {
		return "", err
	}
	if ev.Kind == Status || ev.Kind == Asked {
		// Only these are edited later (a status until it settles, a
		// request until it is decided): the rest is not kept.
		m.mu.Lock()
		m.posted[id] = ev
		m.mu.Unlock()
	}
	return id, nil
}

// Edit shows a status message's new text, or an approval request's
// outcome.
func (m *Messenger) Edit(ctx context.Context, _, messageID, content string) error {
	m.mu.Lock()
	ev, ok := m.posted[messageID]
	m.mu.Unlock()
	if !ok {
		// Posted by an earlier chat of the team: nothing here shows it.
		return nil
	}
	ev.Text = content
	if ev.Kind == Asked {
		ev.Kind = Settled
	}
	if ev.Kind == Settled || render.IsSettled(content) {
		m.mu.Lock()
		delete(m.posted, messageID) // its last edit
		m.mu.Unlock()
	}
	return m.emit(ctx, ev)
}

// Find finds nothing: a message that may have been shown before a chat
// stopped is shown again rather than lost.
func (m *Messenger) Find(context.Context, master.OutMessage) (string, error) { return "", nil }

// Typing shows nothing: the status block says the team is at work.
func (m *Messenger) Typing(context.Context, string) error { return nil }

// Archive has nothing to archive.
func (m *Messenger) Archive(context.Context, string) error { return nil }
