package terminal

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/charmbracelet/bubbles/textinput"
	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/glamour"
	"github.com/charmbracelet/lipgloss"

	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/master"
)

// mode is what keys do now.
type mode int

const (
	typing     mode = iota // keys edit the input line
	approving              // y approves, n denies the first request
	leaving                // the person pressed Ctrl-C: leave or dissolve?
	dissolving             // waiting for the team's closing summary
)

// dissolveWait bounds the wait for the closing summary after /dissolve.
const dissolveWait = 15 * time.Second

// maxHistory bounds the input history.
const maxHistory = 200

// live is a status message shown in place.
type live struct {
	id, text string
}

// ask is a request for approval shown until it is decided.
type ask struct {
	id   int64
	text string
}

// model is the chat's bubbletea model.
type model struct {
	ctx     context.Context
	team    Team
	m       *Messenger
	words   Words
	intro   []string
	recent  []master.Exchange
	pending []master.Approval
	st      styles
	md      *glamour.TermRenderer
	memo    map[string]string // rendered live texts, for the next frame
	width   int

	input   textinput.Model
	history []string
	histPos int    // where Up/Down are in history; len(history): the draft
	draft   string // the line being typed before browsing history

	lives   []live         // status messages, in the order posted
	asks    []ask          // requests waiting, oldest first
	decided map[int64]bool // requests decided here: their outcome is printed
	mode    mode
	note    string // a one-line notice under the input (an error, a hint)

	queue    []string // lines to print above the UI, in order
	printing bool     // a print is on its way: the next waits for it
	quitting bool     // quit once everything queued is printed
	outcome  Outcome
}

// Messages of the model.
type (
	eventMsg   Event
	logMsg     string
	closedMsg  struct{}
	printedMsg struct{}
	noteMsg    string // an action's outcome to show under the input
	printMsg   string // an action's output to print above the UI
	decidedMsg struct {
		a   master.Approval
		err error
	}
	dissolvedMsg struct{ err error }
	giveUpMsg    struct{}
)

func newModel(ctx context.Context, team Team, m *Messenger, opt Options, r *lipgloss.Renderer) *model {
	in := textinput.New()
	in.Prompt = "› "
	in.Placeholder = "a message for the team, or /help"
	in.CharLimit = 4000
	in.Focus()
	mdl := &model{ctx: ctx, team: team, m: m, words: opt.Words, intro: opt.Intro, recent: opt.Recent, pending: opt.Pending, st: newStyles(r), input: in,
		decided: map[int64]bool{}, width: 80}
	mdl.input.PromptStyle = mdl.st.prompt
	mdl.setWidth(80)
	return mdl
}

func (m *model) setWidth(w int) {
	m.width = max(w, 20)
	m.input.Width = m.width - 4
	md, err := glamour.NewTermRenderer(glamour.WithStandardStyle("dark"), glamour.WithWordWrap(m.width-4),
		glamour.WithPreservedNewLines(), glamour.WithColorProfile(m.st.profile))
	if err == nil {
		m.md = md
	}
	m.memo = nil // rendered for another width
}

// Init prints the banner and starts taking the team's messages.
func (m *model) Init() tea.Cmd {
	for i, l := range m.intro {
		if i == 0 {
			m.queue = append(m.queue, m.st.title.Render(Clean(l)))
			continue
		}
		m.queue = append(m.queue, m.st.faint.Render(Clean(l)))
	}
	for _, e := range m.recent {
		m.queue = append(m.queue, m.st.you.Render("you ›")+" "+m.words.Translate(e.Message), m.st.team.Render("team ›")+"\n"+m.render(e.Answer))
	}
	for _, a := range m.pending {
		text := render.Approval(a)
		m.asks = append(m.asks, ask{id: a.ID, text: text})
		m.queue = append(m.queue, m.render(text))
	}
	m.queue = append(m.queue, m.st.faint.Render("Enter sends · ↑↓ history · /help · Ctrl-C to leave or dissolve"))
	return tea.Batch(textinput.Blink, m.nextEvent(), m.nextLog(), m.flush())
}

// nextEvent waits for the team's next message.
func (m *model) nextEvent() tea.Cmd {
	return func() tea.Msg {
		select {
		case ev := <-m.m.Events():
			return eventMsg(ev)
		case <-m.m.Done():
			return closedMsg{}
		}
	}
}

// nextLog waits for the next log line.
func (m *model) nextLog() tea.Cmd {
	return func() tea.Msg {
		select {
		case l := <-m.m.Logs():
			return logMsg(l)
		case <-m.m.Done():
			return nil
		}
	}
}

// print queues lines above the UI.
func (m *model) print(lines ...string) tea.Cmd {
	m.queue = append(m.queue, lines...)
	return m.flush()
}

// flush prints the queued lines, in order: one print on its way at a
// time (bubbletea runs commands concurrently). Once everything is
// printed, a quitting model quits.
func (m *model) flush() tea.Cmd {
	if m.printing {
		return nil
	}
	if len(m.queue) == 0 {
		if m.quitting {
			return tea.Quit
		}
		return nil
	}
	text := strings.Join(m.queue, "\n")
	m.queue, m.printing = nil, true
	return tea.Sequence(tea.Println(text), func() tea.Msg { return printedMsg{} })
}

// quit ends the chat with outcome once what is queued is printed; the
// team's messages not taken yet stay in the outbox.
func (m *model) quit(o Outcome) tea.Cmd {
	m.outcome, m.quitting = o, true
	m.m.Close()
	m.input.Blur()
	return m.flush()
}

// Update handles one message.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.setWidth(msg.Width)
		return m, nil
	case printedMsg:
		m.printing = false
		return m, m.flush()
	case eventMsg:
		return m, tea.Batch(m.event(Event(msg)), m.nextEvent())
	case logMsg:
		return m, tea.Batch(m.print(m.st.faint.Render("log: "+Clean(string(msg)))), m.nextLog())
	case closedMsg:
		if !m.quitting {
			return m, m.quit(Left)
		}
		return m, nil
	case noteMsg:
		m.note = string(msg)
		return m, nil
	case printMsg:
		return m, m.print(string(msg))
	case decidedMsg:
		return m, m.decidedOne(msg.a, msg.err)
	case dissolvedMsg:
		if msg.err != nil {
			m.mode, m.note = typing, master.ErrorMessage(msg.err)
			return m, nil
		}
		return m, tea.Tick(dissolveWait, func(time.Time) tea.Msg { return giveUpMsg{} })
	case giveUpMsg:
		if m.mode == dissolving && !m.quitting {
			return m, tea.Batch(m.print(m.st.faint.Render("The team is dissolved; its summary did not come in time.")), m.quit(Dissolved))
		}
		return m, nil
	case tea.KeyMsg:
		if m.quitting {
			return m, nil
		}
		return m, m.key(msg)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	return m, cmd
}

// key handles a key in the current mode.
func (m *model) key(k tea.KeyMsg) tea.Cmd {
	switch m.mode {
	case leaving:
		switch k.String() {
		case "l", "L", "ctrl+c", "q":
			return m.quit(Left)
		case "d", "D":
			return m.dissolve()
		default:
			m.mode = typing
			return nil
		}
	case dissolving:
		return nil
	case approving:
		if len(m.asks) == 0 {
			m.mode = typing
			break
		}
		switch k.String() {
		case "y", "Y":
			return m.decide(m.asks[0].id, true)
		case "n", "N":
			return m.decide(m.asks[0].id, false)
		case "ctrl+c":
			m.mode = leaving
			return nil
		case "esc", "tab":
			m.mode = typing
			return nil
		}
		return nil
	}
	switch k.Type {
	case tea.KeyCtrlC:
		if m.input.Value() != "" {
			m.input.SetValue("")
			return nil
		}
		m.mode, m.note = leaving, ""
		return nil
	case tea.KeyCtrlD:
		if m.input.Value() == "" {
			return m.quit(Left)
		}
	case tea.KeyTab:
		if len(m.asks) > 0 {
			m.mode = approving
			return nil
		}
	case tea.KeyUp:
		m.browse(-1)
		return nil
	case tea.KeyDown:
		m.browse(+1)
		return nil
	case tea.KeyEnter:
		line := strings.TrimSpace(m.input.Value())
		m.input.SetValue("")
		m.note = ""
		if line == "" {
			return nil
		}
		m.remember(line)
		return m.submit(line)
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(k)
	return cmd
}

// remember adds a line to the input history.
func (m *model) remember(line string) {
	if n := len(m.history); n == 0 || m.history[n-1] != line {
		m.history = append(m.history, line)
		if len(m.history) > maxHistory {
			m.history = m.history[1:]
		}
	}
	m.histPos, m.draft = len(m.history), ""
}

// browse moves through the input history.
func (m *model) browse(step int) {
	if m.histPos == len(m.history) {
		m.draft = m.input.Value()
	}
	pos := min(max(m.histPos+step, 0), len(m.history))
	if pos == m.histPos {
		return
	}
	m.histPos = pos
	if pos == len(m.history) {
		m.input.SetValue(m.draft)
	} else {
		m.input.SetValue(m.history[pos])
	}
	m.input.CursorEnd()
}

// submit sends a line: a command, or a message for the team.
func (m *model) submit(line string) tea.Cmd {
	cmd, isCmd := parseCommand(line)
	if !isCmd {
		say := func() tea.Msg {
			if err := m.team.Say(m.ctx, line); err != nil {
				return noteMsg("Not sent: " + master.ErrorMessage(err))
			}
			return nil
		}
		return tea.Batch(m.print(m.st.you.Render("you ›")+" "+Clean(line)), say)
	}
	switch cmd.name {
	case "team":
		return func() tea.Msg {
			e, err := m.team.Show(m.ctx)
			if err != nil {
				return noteMsg(master.ErrorMessage(err))
			}
			return printMsg(m.render(TeamText(e)))
		}
	case "replan":
		return func() tea.Msg {
			if err := m.team.Replan(m.ctx, cmd.arg); err != nil {
				return noteMsg(master.ErrorMessage(err))
			}
			return noteMsg("") // the team's notice says what changed
		}
	case "memory":
		return func() tea.Msg {
			text, err := m.team.Memory(m.ctx, cmd.arg)
			if err != nil {
				return noteMsg(master.ErrorMessage(err))
			}
			return printMsg(m.render(text))
		}
	case "dissolve":
		return m.dissolve()
	case "approve", "deny":
		id, err := requestID(cmd.arg)
		if err != nil {
			m.note = err.Error()
			return nil
		}
		return m.decide(id, cmd.name == "approve")
	case "quit", "exit":
		return m.quit(Left)
	default:
		m.note = Help
		return nil
	}
}

// dissolve ends the team; the chat ends with its summary.
func (m *model) dissolve() tea.Cmd {
	m.mode, m.note = dissolving, "Dissolving the team…"
	return func() tea.Msg { return dissolvedMsg{err: m.team.Dissolve(m.ctx)} }
}

// decide approves or denies request id.
func (m *model) decide(id int64, approve bool) tea.Cmd {
	return func() tea.Msg {
		a, err := m.team.Decide(m.ctx, id, approve)
		return decidedMsg{a: a, err: err}
	}
}

// decidedOne shows a decision made here, at once (the settled message
// comes later, and is not printed again).
func (m *model) decidedOne(a master.Approval, err error) tea.Cmd {
	if err != nil {
		m.note = master.ErrorMessage(err)
		return nil
	}
	if m.decided[a.ID] {
		return nil // a second key press: shown once
	}
	m.decided[a.ID] = true
	text := m.decision(a.ID, render.Approval(a))
	m.dropAsk(a.ID)
	return m.print(m.render(text))
}

// decision is what the settled text of a request adds to the request as
// it was printed when it came (its outcome, below the same arguments):
// the person saw the call in full before deciding, once is enough.
func (m *model) decision(id int64, settled string) string {
	var asked string
	for _, a := range m.asks {
		if a.id == id {
			asked = a.text
		}
	}
	was, now := strings.Split(asked, "\n"), strings.Split(settled, "\n")
	n := 0
	for n < len(was) && n < len(now) && was[n] == now[n] {
		n++
	}
	if n == 0 || n == len(now) {
		return settled
	}
	return strings.Join(now[n:], "\n")
}

// dropAsk removes a request from those waiting.
func (m *model) dropAsk(id int64) {
	for i, a := range m.asks {
		if a.id == id {
			m.asks = append(m.asks[:i], m.asks[i+1:]...)
			break
		}
	}
	if len(m.asks) == 0 && m.mode == approving {
		m.mode = typing
	}
}

// event shows one of the team's messages.
func (m *model) event(ev Event) tea.Cmd {
	switch ev.Kind {
	case Said:
		cmd := m.print(m.st.team.Render(speaker(ev)+" ›") + "\n" + m.render(ev.Text))
		if ev.Out == master.OutSummary && m.mode == dissolving {
			return tea.Batch(cmd, m.quit(Dissolved))
		}
		return cmd
	case Status:
		if render.IsSettled(ev.Text) {
			m.dropLive(ev.ID)
			return m.print(m.st.faint.Render(oneLine(m.words.Translate(ev.Text))))
		}
		for i := range m.lives {
			if m.lives[i].id == ev.ID {
				m.lives[i].text = ev.Text
				return nil
			}
		}
		m.lives = append(m.lives, live{id: ev.ID, text: ev.Text})
	case Asked:
		for _, a := range m.asks {
			if a.id == ev.Approval {
				return nil // shown when the chat resumed the team
			}
		}
		// The keys that decide are offered, never switched to: a person
		// typing when the request arrives must not approve it with the
		// next letter (Tab, then y or n).
		m.asks = append(m.asks, ask{id: ev.Approval, text: ev.Text})
		// The whole request, every argument, above the prompt: what the
		// person decides on (the prompt below keeps only its first line).
		return m.print(m.render(ev.Text))
	case Settled:
		if m.decided[ev.Approval] {
			return nil
		}
		text := m.decision(ev.Approval, ev.Text)
		m.dropAsk(ev.Approval)
		return m.print(m.render(text))
	case Logged:
		return m.print(m.st.faint.Render("log: " + Clean(ev.Text)))
	}
	return nil
}

func (m *model) dropLive(id string) {
	for i := range m.lives {
		if m.lives[i].id == id {
			m.lives = append(m.lives[:i], m.lives[i+1:]...)
			return
		}
	}
}

// render is a message as the terminal shows it: Discord's markup in
// terminal words, Markdown rendered, subtext faint.
// rendered is render(text), kept from one frame to the next: View runs
// at every key and cursor blink, and the live texts change far less.
func (m *model) rendered(text string) string {
	if r, ok := m.memo[text]; ok {
		return r
	}
	if len(m.memo) >= maxMemo || m.memo == nil {
		m.memo = map[string]string{}
	}
	r := m.render(text)
	m.memo[text] = r
	return r
}

// maxMemo bounds the texts kept rendered: the live block's and a request's.
const maxMemo = 64

func (m *model) render(text string) string {
	body, sub := Split(m.words.Translate(text))
	out := body
	if m.md != nil && body != "" {
		if r, err := m.md.Render(body); err == nil {
			// glamour pads every line to the wrap width: boxes around it
			// would overflow the terminal.
			out = padding.ReplaceAllString(strings.Trim(r, "\n"), "$1")
		}
	}
	for _, s := range sub {
		out += "\n" + m.st.faint.PaddingLeft(2).Width(m.width-2).Render(s)
	}
	return out
}

// View is the live part: the status of the work in progress, the
// requests waiting for a decision, the question of Ctrl-C, the input.
func (m *model) View() string {
	if m.quitting {
		return ""
	}
	var b strings.Builder
	for _, l := range m.lives {
		b.WriteString(m.st.status.Render(m.rendered(l.text)) + "\n")
	}
	if len(m.asks) > 0 {
		a := m.asks[0]
		head, _, _ := strings.Cut(m.words.Translate(a.text), "\n")
		keys := fmt.Sprintf("Tab, then y or n to decide (or /approve %d, /deny %d)", a.id, a.id)
		if m.mode == approving {
			keys = "y approve · n deny · Esc decide later"
		}
		if more := len(m.asks) - 1; more > 0 {
			keys += fmt.Sprintf(" · %d more waiting", more)
		}
		b.WriteString(m.st.box.Width(m.width-4).Render(fmt.Sprintf("Request %d: %s\n%s", a.id, m.rendered(head), m.st.key.Render(keys))) + "\n")
	}
	switch m.mode {
	case leaving:
		b.WriteString(m.st.box.Width(m.width-4).Render("Leave the chat?\n"+m.st.key.Render(
			"l leave the team as it is (--resume reopens it) · d dissolve it · Esc stay")) + "\n")
	case dissolving:
		b.WriteString(m.st.faint.Render("Dissolving the team…") + "\n")
	}
	if m.mode != dissolving {
		b.WriteString(m.input.View() + "\n")
	}
	if m.note != "" {
		b.WriteString(m.st.faint.Width(max(m.width-2, 20)).Render(m.note) + "\n")
	}
	return b.String()
}

// padding is the spaces that end a line, before the escape sequences
// that may close it.
var padding = regexp.MustCompile(`(?m)(?:(?:\x1b\[[0-9;]*m)* )+((?:\x1b\[[0-9;]*m)*)$`)

// oneLine joins a text's lines.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
