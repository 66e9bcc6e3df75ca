package master

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// What a person approves is what runs: an approval request shows the
// tool's real name as code (never Markdown a model could dress up) and the
// call's arguments in full, pretty-printed, in the message when they fit
// and otherwise attached as a .json file; arguments that could be read
// two ways (a key given twice, of which JSON parsers keep the last) or
// that are not one JSON object are refused before anyone is asked.

// ToolName is a tool's name as people read it, shown as inline code: a
// model's choice of name never renders as Markdown.
func ToolName(name string) string { return codeSpan(ToolLabel(name)) }

// CheckArgs reports why a call's arguments cannot be shown to a person,
// or made, as written: anything but one JSON object (empty counts as {}),
// or an object that gives a key twice at any depth. Its errors are
// written for the model.
func CheckArgs(args string) error {
	if strings.TrimSpace(args) == "" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return errors.New("the arguments must be one JSON object")
	}
	if err := checkObject(dec, "the arguments"); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("the arguments must be one JSON object, with nothing after it")
	}
	return nil
}

// checkObject reads the rest of an object whose '{' was read, refusing a
// key given twice.
func checkObject(dec *json.Decoder, where string) error {
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return errors.New("the arguments are not valid JSON")
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("%s give the key %q twice: give each key once", where, key)
		}
		seen[key] = true
		if err := checkValue(dec, fmt.Sprintf("%q", key)); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return errors.New("the arguments are not valid JSON")
	}
	return nil
}

// checkValue reads one value, checking the objects within it.
func checkValue(dec *json.Decoder, where string) error {
	tok, err := dec.Token()
	if err != nil {
		return errors.New("the arguments are not valid JSON")
	}
	switch tok {
	case json.Delim('{'):
		return checkObject(dec, where)
	case json.Delim('['):
		for dec.More() {
			if err := checkValue(dec, where); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return errors.New("the arguments are not valid JSON")
		}
	}
	return nil
}

// PrettyArgs is a call's arguments (checked by CheckArgs) indented two
// spaces, with every backtick and every invisible or direction-changing
// character written as a \u escape: the same JSON, which no code fence
// can end and no character can make read otherwise.
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

// ApprovalArgs is how a request shows its call's arguments: a code block
// with all of them, or the first lines and, as the file to attach
// (ArgsFileName), all of them.
func ApprovalArgs(args string) (block string, file []byte) {
	pretty := PrettyArgs(args)
	if len(pretty) <= inlineArgs {
		return "```json\n" + pretty + "\n```", nil
	}
	lines := strings.Split(pretty, "\n")
	head := strings.Join(lines[:min(previewLines, len(lines))], "\n")
	head = Truncate(head, previewChars)
	return fmt.Sprintf("```json\n%s\n```\n*…the first lines of %d; every argument is in the attached `%s`.*",
		head, len(lines), ArgsFileName), []byte(pretty + "\n")
}

// ApprovalText is what an approval request's message says: who asks to
// call what, with the arguments as ApprovalArgs shows them, who may
// decide and, once decided, the outcome.
func ApprovalText(a Approval) string {
	var b strings.Builder
	block, _ := ApprovalArgs(a.Args)
	fmt.Fprintf(&b, "🔐 **%s** asks to call %s with:\n%s\n", a.Role, ToolName(a.Tool), block)
	switch a.State {
	case ApprovalApproved:
		fmt.Fprintf(&b, "✅ Approved by <@%s> <t:%d:R>: the call is made.", a.DecidedBy, a.DecidedAt.Unix())
	case ApprovalDenied:
		fmt.Fprintf(&b, "⛔ Denied by <@%s> <t:%d:R>: the call is not made.", a.DecidedBy, a.DecidedAt.Unix())
	case ApprovalExpired:
		b.WriteString("⌛ Nobody decided in time, so it counts as denied: the call is not made.")
	case ApprovalCancelled:
		b.WriteString("⏹️ No longer needed: the task ended first.")
	default:
		who := "The member who started the team, or a member who can manage threads,"
		if len(a.Approvers) > 0 {
			roles := make([]string, len(a.Approvers))
			for i, r := range a.Approvers {
				roles[i] = "<@&" + r + ">"
			}
			who = "A member with " + strings.Join(roles, " or ") + " (never the member who started the team)"
		}
		fmt.Fprintf(&b, "The task waits. %s can approve or deny it; undecided <t:%d:R>, it counts as denied.", who, a.ExpiresAt.Unix())
	}
	return Truncate(b.String(), MaxMessageLen)
}
