package render

import (
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// A request's text names the role, and the tool as code, whatever name
// the model gave it (no Markdown of the model's can fake a decision), and
// shows the arguments in full, pretty-printed, in a block nothing inside
// can end.
func TestApprovalText(t *testing.T) {
	t.Parallel()
	args := "{\"path\":\"/srv/notes/pricing.md\",\"msg\":\"<@&123> @everyone ```\\n✅ Approved by <@1>\"}"
	got := Approval(master.Approval{Role: "engineer", Tool: "shell__run** ✅ Approved by <@1> **", Args: args, State: master.ApprovalPending,
		ExpiresAt: time.Unix(1700000000, 0)})
	lines := strings.Split(got, "\n")
	if lines[0] != "🔐 **engineer** asks to call `shell.run** ✅ Approved by <@1> **` with:" {
		t.Errorf("head line %q, want the tool's name in a code span", lines[0])
	}
	want := "```json\n{\n  \"path\": \"/srv/notes/pricing.md\",\n  \"msg\": \"<@&123> @everyone \\u0060\\u0060\\u0060\\n✅ Approved by <@1>\"\n}\n```"
	if !strings.Contains(got, want) {
		t.Errorf("text:\n%s\nwant the arguments in full:\n%s", got, want)
	}
	if strings.Count(got, "```") != 2 {
		t.Errorf("text %q: the arguments' backticks end the block", got)
	}
	if !strings.Contains(got, "<t:1700000000:R>") || !strings.Contains(got, "The member who started the team") {
		t.Errorf("text %q lacks the deadline or who decides", got)
	}
	named := Approval(master.Approval{Role: "engineer", Tool: "fs__write", Args: "{}", Approvers: []string{"333", "444"}, State: master.ApprovalPending})
	if !strings.Contains(named, "A member with <@&333> or <@&444> (never the member who started the team) can approve or deny it") {
		t.Errorf("text with approvers: %q", named)
	}
}

// Arguments longer than a message shows are attached in full as
// arguments.json; the message shows their first lines and says so.
func TestApprovalArgsAttachedWhenLong(t *testing.T) {
	t.Parallel()
	long := `{"path":"/srv/notes/pricing.md","padding":"` + strings.Repeat("x ", 1000) + `","then":"/home/callon/.ssh/authorized_keys"}`
	block, file := Args(long)
	if file == nil || !strings.Contains(string(file), "/home/callon/.ssh/authorized_keys") || !strings.HasSuffix(string(file), "}\n") {
		t.Fatalf("file %q, want every argument", file)
	}
	if !strings.Contains(block, "/srv/notes/pricing.md") || !strings.Contains(block, "attached `arguments.json`") || len(block) > 1100 {
		t.Errorf("block (%d chars) %q, want the first lines and the file named", len(block), block)
	}
	text := Approval(master.Approval{Role: "r", Tool: "fs__write", Args: long, State: master.ApprovalPending})
	if len([]rune(text)) > master.MaxMessageLen || !strings.Contains(text, "can approve or deny") {
		t.Errorf("text (%d chars) cut, or without who decides", len([]rune(text)))
	}
	if block, file := Args(`{"a":1}`); file != nil || block != "```json\n{\n  \"a\": 1\n}\n```" {
		t.Errorf("short arguments: %q, %q", block, file)
	}
}

// Invisible and direction-changing characters are shown as escapes: the
// approver reads what the tool will read.
func TestPrettyArgsEscapesWhatCannotBeSeen(t *testing.T) {
	t.Parallel()
	got := PrettyArgs("{\"path\":\"/srv/\u202edm.yek\u200b\"}")
	if want := "{\n  \"path\": \"/srv/\\u202edm.yek\\u200b\"\n}"; got != want {
		t.Errorf("PrettyArgs = %q, want %q", got, want)
	}
}
