// Package terminal is the terminal surface of `callon chat`: what the
// team posts, as master.Messenger events (Messenger), shown either by a
// native terminal UI on bubbletea, lipgloss and glamour (RunTUI: an input
// line with history, replies rendered as Markdown, the status as one live
// block, approvals as a prompt that stays until decided) or, when the
// output is not a terminal, as plain lines for scripts and tests
// (RunLines). Discord's markup becomes terminal words (Translate), and no
// text from a model reaches the terminal with a control character in it
// (Clean). What people do goes to the core through the Team port. The
// package imports master (types) only of callon's, and is the only one
// that imports the TUI libraries.
package terminal
