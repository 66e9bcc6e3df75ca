package terminal

import (
	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/master"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestClean(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"plain\ttext\nnext", "plain\ttext\nnext"},
		{"\x1b]0;pwned\x07title", "]0;pwnedtitle"},
		{"\x1b[2J\x1b[Hcleared", "[2J[Hcleared"},
		{"over\rwritten", "overwritten"},
		{"bell\x07 and \u009b31m C1", "bell and 31m C1"},
		{"raw \x9b byte", "raw \uFFFD byte"}, // invalid UTF-8 is replaced, never passed on
		{"evil\u202Etxt.exe", "eviltxt.exe"},
		{"emoji 👩\u200d💻 stays", "emoji 👩\u200d💻 stays"},
	} {
		if got := Clean(c.in); got != c.want {
			t.Errorf("Clean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestTranslate(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	w := Words{Names: func(id string) string {
		if id == "you" {
			return "you"
		}
		return ""
	}, Channels: func(id string) string {
		if id == "terminal" {
			return "the terminal"
		}
		return ""
	}, Now: func() time.Time { return now }, Loc: time.UTC}
	at := now.Add(30 * time.Minute).Unix()
	for _, c := range []struct{ in, want string }{
		{"✅ Approved by <@you> <t:" + itoa(now.Add(-3*time.Minute).Unix()) + ":R>", "✅ Approved by you 3 minutes ago"},
		{"undecided <t:" + itoa(at) + ":R>", "undecided in 30 minutes"},
		{"at <t:" + itoa(at) + ":t> on <t:" + itoa(at) + ":D>", "at 12:30 on 26 November 2026"},
		{"ping <@!123> and <@&456> in <#789>", "ping someone and a role in a channel"},
		{"The teams of <#terminal> keep no notes.", "The teams of the terminal keep no notes."},
		{"This thread is archived; start a new team with `/callon`.", "Start another team with `callon chat --goal \"…\"`."},
		{"Use `/callon goal: x` to start", "Use `callon chat --goal \"…\"` to start"},
		{"not <t:abc:R> a time", "not <t:abc:R> a time"},
		{"\x1b[31mred", "[31mred"},
	} {
		if got := w.Translate(c.in); got != c.want {
			t.Errorf("Translate(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	body, sub := Split("Answer\n\n-# scripted\nmore\n-# second")
	if body != "Answer\n\nmore" || strings.Join(sub, "|") != "scripted|second" {
		t.Errorf("Split = %q, %q", body, sub)
	}
}

func TestRelative(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		10 * time.Second:           "just now",
		-90 * time.Second:          "2 minutes ago",
		time.Minute:                "in 1 minute",
		3 * time.Hour:              "in 3 hours",
		-50 * time.Hour:            "2 days ago",
		7*24*time.Hour + time.Hour: "in 7 days",
	} {
		if got := relative(d); got != want {
			t.Errorf("relative(%v) = %q, want %q", d, got, want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// The terminal's words for Discord's sentences follow what callon really
// posts: a request for approval as render writes it, the notice of an
// archived thread as master writes it.
func TestTranslateFollowsWhatIsPosted(t *testing.T) {
	t.Parallel()
	asked := Words{}.Translate(render.Approval(master.Approval{ID: 3, Role: "engineer", Tool: "demo.roll_dice",
		State: master.ApprovalPending, ExpiresAt: time.Now().Add(time.Hour)}))
	if !strings.Contains(asked, "You can approve or deny it") || strings.Contains(asked, "manage threads") {
		t.Errorf("a request in the terminal:\n%s\nwant it to say you can decide", asked)
	}
	if got := (Words{}).Translate("used 3 tokens.\n" + master.ArchivedNote); !strings.Contains(got, "callon chat --goal") || strings.Contains(got, "/callon") {
		t.Errorf("the archived notice in the terminal: %q", got)
	}
}
