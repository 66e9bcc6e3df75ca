package terminal

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/master"
)

// Options are what a chat's terminal shows besides the team's messages.
type Options struct {
	// Intro is printed first, a line each: the banner.
	Intro []string
	// Recent are the team's last exchanges, shown after Intro when a chat
	// resumes a team; Pending its requests still waiting for a decision.
	Recent  []master.Exchange
	Pending []master.Approval
	Words   Words
}

// answers are the messages a line-mode chat waits for after a message:
// the team's answer, or a request to approve a call of a tool.
var answers = []master.OutKind{master.OutReply, master.OutQuestion, master.OutApproval}

// RunLines is the chat for scripts and tests: it reads the person's lines
// from in until EOF (Left), /quit (Left) or /dissolve (Dissolved), and
// prints what the team posts to out, a line per message: after each
// message it waits for the team's answer (a reply, a question, or a
// request for approval) before it reads the next line. Status messages
// are printed once, settled; Discord's markup is translated but Markdown
// is left as it is.
func RunLines(ctx context.Context, in io.Reader, out io.Writer, team Team, m *Messenger, opt Options) (Outcome, error) {
	p := &printer{w: out, words: opt.Words, changed: make(chan struct{}), decided: map[int64]bool{}, asked: map[int64]bool{},
		settled: map[int64]bool{}}
	for _, l := range opt.Intro {
		p.say(Clean(l))
	}
	for _, e := range opt.Recent {
		p.say("you › " + p.plain(e.Message))
		p.say("team › " + p.plain(e.Answer))
	}
	for _, a := range opt.Pending {
		p.show(Event{Kind: Asked, Out: master.OutApproval, Approval: a.ID, Text: render.Approval(a)})
	}
	shown := make(chan struct{})
	defer func() { m.Close(); <-shown }()
	go func() {
		defer close(shown)
		for {
			select {
			case ev := <-m.Events():
				p.show(ev)
			case line := <-m.Logs():
				p.show(Event{Kind: Logged, Text: line})
			case <-m.Done():
				return
			}
		}
	}()
	p.say("Type a message for the team; /help lists the commands.")
	lines := make(chan string)
	scanErr := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		scanErr <- sc.Err()
		close(lines)
	}()
	for {
		var line string
		var ok bool
		select {
		case <-ctx.Done():
			return Left, nil
		case line, ok = <-lines:
		}
		if !ok {
			return Left, <-scanErr
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		cmd, isCmd := parseCommand(line)
		if !isCmd {
			seen := p.seen()
			if err := team.Say(ctx, line); errors.Is(err, ErrNotTaken) {
				p.say(master.ErrorMessage(err))
				continue
			} else if err != nil {
				return Left, fmt.Errorf("send the message: %w", err)
			}
			if p.waiting(0) {
				// Its answer comes after the request is decided, which
				// only the next lines can do: read them meanwhile.
				p.say("  (a request waits for /approve or /deny: this message is answered after it)")
				continue
			}
			if err := p.waitFor(ctx, seen, answers...); err != nil {
				return Left, nil
			}
			continue
		}
		switch cmd.name {
		case "team":
			e, err := team.Show(ctx)
			if err != nil {
				p.say(master.ErrorMessage(err))
				continue
			}
			p.say(p.words.Translate(TeamText(e)))
		case "replan":
			if err := team.Replan(ctx, cmd.arg); err != nil {
				p.say(master.ErrorMessage(err))
			}
		case "memory":
			text, err := team.Memory(ctx, cmd.arg)
			if err != nil {
				text = master.ErrorMessage(err)
			}
			p.say(p.words.Translate(text))
		case "dissolve":
			seen := p.seen()
			if err := team.Dissolve(ctx); err != nil {
				p.say(master.ErrorMessage(err))
				continue
			}
			_ = p.waitFor(ctx, seen, master.OutSummary) // the summary, unless the chat is stopped first
			return Dissolved, nil
		case "approve", "deny":
			id, err := requestID(cmd.arg)
			if err != nil {
				p.say(err.Error())
				continue
			}
			seen := p.seen()
			open := p.waiting(id)
			a, err := team.Decide(ctx, id, cmd.name == "approve")
			if err != nil {
				p.say(master.ErrorMessage(err))
				continue
			}
			p.decide(a)
			if !open || a.State != master.ApprovalApproved && a.State != master.ApprovalDenied {
				continue // settled before: nothing new comes of it
			}
			if err := p.waitFor(ctx, seen, answers...); err != nil {
				return Left, nil
			}
		case "quit", "exit":
			return Left, nil
		default:
			p.say(Help)
		}
	}
}

// printer prints what the team posts, and lets RunLines wait for an
// answer.
type printer struct {
	w     io.Writer
	words Words

	mu      sync.Mutex
	posted  []master.OutKind // the kind of every message printed, in order
	changed chan struct{}    // closed and replaced at every message
	decided map[int64]bool   // requests decided here: their outcome is printed
	asked   map[int64]bool   // requests shown
	settled map[int64]bool   // requests decided or ended, here or elsewhere
}

// waiting says whether request id (any request when id is 0) was shown
// and is not settled yet.
func (p *printer) waiting(id int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for a := range p.asked {
		if (id == 0 || a == id) && !p.settled[a] {
			return true
		}
	}
	return false
}

func (p *printer) say(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, text)
}

// show prints an event.
func (p *printer) show(ev Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	text := p.plain(ev.Text)
	switch ev.Kind {
	case Said:
		fmt.Fprintln(p.w, speaker(ev)+" › "+text)
	case Status:
		if !render.IsSettled(ev.Text) {
			return // scripts get the settled line only
		}
		fmt.Fprintln(p.w, "  "+text)
	case Asked:
		if p.asked[ev.Approval] {
			return // shown when the chat resumed the team
		}
		p.asked[ev.Approval] = true
		fmt.Fprintln(p.w, "team › "+text)
		fmt.Fprintf(p.w, "        (answer /approve %d or /deny %d)\n", ev.Approval, ev.Approval)
	case Settled:
		p.settled[ev.Approval] = true
		if p.decided[ev.Approval] {
			return // printed when it was decided
		}
		fmt.Fprintln(p.w, "  "+text)
	case Logged:
		fmt.Fprintln(p.w, "  log: "+text)
	}
	if ev.Kind == Said || ev.Kind == Asked {
		out := ev.Out
		if ev.Part > 0 {
			out = "" // a later part of an answer already counted
		}
		p.posted = append(p.posted, out)
		close(p.changed)
		p.changed = make(chan struct{})
	}
}

// decide prints the outcome of a request decided here.
func (p *printer) decide(a master.Approval) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.decided[a.ID] = true
	p.settled[a.ID] = true
	_, outcome, _ := strings.Cut(p.plain(render.Approval(a)), "\n")
	fmt.Fprintln(p.w, "  "+outcome)
}

// plain is a message for a script: Discord's markup translated, subtext
// in parentheses.
func (p *printer) plain(text string) string {
	body, sub := Split(p.words.Translate(text))
	for _, s := range sub {
		body += "\n(" + s + ")"
	}
	return body
}

// seen is how many messages the team has posted so far.
func (p *printer) seen() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.posted)
}

// waitFor waits until a message of one of kinds is posted after the
// first seen ones.
func (p *printer) waitFor(ctx context.Context, seen int, kinds ...master.OutKind) error {
	for {
		p.mu.Lock()
		found := slices.ContainsFunc(p.posted[seen:], func(k master.OutKind) bool { return slices.Contains(kinds, k) })
		changed := p.changed
		p.mu.Unlock()
		if found {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// speaker is who a message is from: the team, or one of its members
// (personas), by name.
func speaker(ev Event) string {
	if ev.From != "" {
		return Clean(ev.From)
	}
	return "team"
}
