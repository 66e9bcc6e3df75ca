package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/callonbot/callon/master"
)

// PrettyArgs is a call's arguments (checked by CheckArgs) indented two
// spaces, with every backtick and every invisible or direction-changing
// character written as a \u escape: the same JSON, which no code fence
// can end and no character can make read otherwise.

// Deciders is who may decide a request whose server names no approvers,
// as the request says it (the terminal says "You" instead).
const Deciders = "The member who started the team, or a member who can manage threads,"

func PrettyArgs(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(args), "", "  "); err != nil {
		return args // not shown to anyone: CheckArgs refused it first
	}
	var out strings.Builder
	for _, r := range b.String() {
		switch {
		case r == '\n' || r == ' ':
			out.WriteRune(r)
		case r == '`' || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Co, r) || !unicode.IsGraphic(r):
			fmt.Fprintf(&out, `\u%04x`, r)
		default:
			out.WriteRune(r)
		}
	}
	return out.String()
}

// ArgsFileName is the name of the file an approval request attaches when
// the arguments do not fit in its message.
const ArgsFileName = "arguments.json"

// Bounds of an approval request's message: the arguments are shown whole
// when their block fits in inlineArgs characters, else their first
// previewLines lines (at most previewChars characters) and the file.
const (
	inlineArgs   = 1500
	previewLines = 12
	previewChars = 900
)

// Args is how a request shows its call's arguments: a code block
// with all of them, or the first lines and, as the file to attach
// (ArgsFileName), all of them.
func Args(args string) (block string, file []byte) {
	pretty := PrettyArgs(args)
	if len(pretty) <= inlineArgs {
		return "```json\n" + pretty + "\n```", nil
	}
	lines := strings.Split(pretty, "\n")
	head := strings.Join(lines[:min(previewLines, len(lines))], "\n")
	head = master.Truncate(head, previewChars)
	return fmt.Sprintf("```json\n%s\n```\n*…the first lines of %d; every argument is in the attached `%s`.*",
		head, len(lines), ArgsFileName), []byte(pretty + "\n")
}

// Approval is what an approval request's message says: who asks to
// call what, with the arguments as Args shows them, who may
// decide and, once decided, the outcome.
func Approval(a master.Approval) string {
	var b strings.Builder
	block, _ := Args(a.Args)
	fmt.Fprintf(&b, "🔐 **%s** asks to call %s with:\n%s\n", a.Role, master.ToolName(a.Tool), block)
	switch a.State {
	case master.ApprovalApproved:
		fmt.Fprintf(&b, "✅ Approved by <@%s> <t:%d:R>: the call is made.", a.DecidedBy, a.DecidedAt.Unix())
	case master.ApprovalDenied:
		fmt.Fprintf(&b, "⛔ Denied by <@%s> <t:%d:R>: the call is not made.", a.DecidedBy, a.DecidedAt.Unix())
	case master.ApprovalExpired:
		b.WriteString("⌛ Nobody decided in time, so it counts as denied: the call is not made.")
	case master.ApprovalCancelled:
		b.WriteString("⏹️ No longer needed: the task ended first.")
	default:
		who := Deciders
		if len(a.Approvers) > 0 {
			roles := make([]string, len(a.Approvers))
			for i, r := range a.Approvers {
				roles[i] = "<@&" + r + ">"
			}
			who = "A member with " + strings.Join(roles, " or ") + " (never the member who started the team)"
		}
		fmt.Fprintf(&b, "The task waits. %s can approve or deny it; undecided <t:%d:R>, it counts as denied.", who, a.ExpiresAt.Unix())
	}
	return master.Truncate(b.String(), master.MaxMessageLen)
}

// Ask is a new request's message: its text and, when the arguments do
// not fit in it, the file (ArgsFileName) that holds them all; what the
// worker pool queues (workers.Config.Ask).
func Ask(a master.Approval) (text string, file master.File) {
	if _, data := Args(a.Args); data != nil {
		file = master.File{Name: ArgsFileName, Data: data}
	}
	return Approval(a), file
}
