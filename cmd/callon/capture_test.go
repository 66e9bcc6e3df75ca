package main

import (
	"flag"
	"fmt"
	"html"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

// capture names a file to write the README's picture of a team thread to,
// as HTML (scripts/capture.sh turns it into docs/images/team-thread.png).
var capture = flag.String("capture", "", "write the team thread of TestTeamThreadCapture to this HTML file")

// TestTeamThreadCapture runs the team the README shows, a question fanned
// out to two workers and merged into one reply, and renders its thread as
// Discord shows it. With -capture FILE it writes the page.
func TestTeamThreadCapture(t *testing.T) {
	t.Parallel()
	const answer = "Here is the plan for **March 3**:\n\n" +
		"**Who to invite** — the 40 people on the waitlist who answered our survey, and the 12 design partners. " +
		"They asked for exports and SSO, both in the beta.\n\n" +
		"**What to announce** — a short post: what the beta does, who it is for, how to give feedback " +
		"(draft below, by the writer).\n\n" +
		"> Our beta opens on March 3. Bring your team, tell us what breaks, and help shape 1.0.\n\n" +
		"Next: want the researcher to check the partners' time zones for the kickoff call?"
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(
			delegate(task{Role: "researcher", Instruction: "Find who on the waitlist gave the most feedback"},
				task{Role: "writer", Instruction: "Draft a three-line beta announcement"}),
			reply(answer))),
		llmtest.Match("You are the researcher", llmtest.Always(llmtest.Delay(1200*time.Millisecond, report("40 survey respondents, 12 design partners")))),
		llmtest.Match("You are the writer", llmtest.Always(llmtest.Delay(1600*time.Millisecond, report("Our beta opens on March 3…")))),
	))
	thread := w.team("Plan the launch of our beta")
	msg := w.say(thread, "We open the beta on March 3. Who should we invite, and what do we announce?")
	w.waitReply(thread, msg)
	w.dc.WaitFor(t, func() bool {
		for _, m := range w.botMessages(thread) {
			if strings.HasPrefix(m.Content, "✅ Done in") {
				return true
			}
		}
		return false
	}, "the status message to settle")

	page := renderThread(w.dc, thread, "Plan the launch of our beta")
	for _, want := range []string{
		"Plan the launch of our beta", "alice", "BOT", "Who should we invite",
		"✅ Done in", "researcher", "writer", "<strong>Who to invite</strong>", "<blockquote>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the rendered thread lacks %q", want)
		}
	}
	if strings.Contains(page, "&lt;@") || strings.Contains(page, "<@") {
		t.Error("the rendered thread shows a raw mention")
	}
	if *capture != "" {
		if err := os.WriteFile(*capture, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// renderThread renders a thread of the fake Discord as a page that looks
// like Discord's dark theme: each message with its author, replies with
// the message they answer, Discord's Markdown (bold, code, quotes,
// subtext), mentions as names.
func renderThread(dc *discordtest.Server, threadID, title string) string {
	names := map[string]string{dc.BotUserID(): "callon", dc.UserID(): "alice"}
	byID := map[string]discordtest.Message{}
	var b strings.Builder
	b.WriteString(threadPageHead)
	fmt.Fprintf(&b, "<header><span class=hash>#</span> %s</header>\n<main>\n", html.EscapeString(title))
	clock := time.Date(2026, 2, 24, 10, 41, 0, 0, time.UTC)
	for i, m := range dc.Messages(threadID) {
		byID[m.ID] = m
		if m.Deleted {
			continue
		}
		bot := m.AuthorID == dc.BotUserID()
		name := names[m.AuthorID]
		b.WriteString("<article>")
		if m.Reference != nil {
			if ref, ok := byID[m.Reference.MessageID]; ok {
				fmt.Fprintf(&b, "<div class=replyto>↱ <b>@%s</b> %s</div>", names[ref.AuthorID], html.EscapeString(shorten(ref.Content, 70)))
			}
		}
		avatar := "a"
		if bot {
			avatar = "c"
		}
		fmt.Fprintf(&b, "<div class=\"avatar %s\">%s</div><div class=body><div class=meta><span class=\"name %s\">%s</span>",
			avatar, strings.ToUpper(name[:1]), avatar, name)
		if bot {
			b.WriteString("<span class=tag>BOT</span>")
		}
		fmt.Fprintf(&b, "<span class=time>Today at %s</span></div>", clock.Add(time.Duration(i)*time.Minute/2).Format("15:04"))
		b.WriteString(discordMarkdown(m.Content, names))
		b.WriteString("</div></article>\n")
	}
	b.WriteString("</main>\n<footer>Message #" + html.EscapeString(title) + "</footer>\n</body></html>\n")
	return b.String()
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

var (
	mdBold    = regexp.MustCompile(`\*\*(.+?)\*\*`)
	mdItalic  = regexp.MustCompile(`\*([^*\s][^*]*?)\*`)
	mdCode    = regexp.MustCompile("`([^`]+)`")
	mdMention = regexp.MustCompile(`&lt;@!?(\d+)&gt;`)
	mdStamp   = regexp.MustCompile(`&lt;t:\d+(:[a-zA-Z])?&gt;`)
)

// discordMarkdown renders the Markdown Discord shows, escaping the rest.
func discordMarkdown(text string, names map[string]string) string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		l := html.EscapeString(line)
		l = mdCode.ReplaceAllString(l, "<code>$1</code>")
		l = mdBold.ReplaceAllString(l, "<strong>$1</strong>")
		l = mdItalic.ReplaceAllString(l, "<em>$1</em>")
		l = mdMention.ReplaceAllStringFunc(l, func(s string) string {
			id := mdMention.FindStringSubmatch(s)[1]
			return "<span class=mention>@" + names[id] + "</span>"
		})
		l = mdStamp.ReplaceAllString(l, "<span class=stamp>just now</span>")
		switch {
		case strings.HasPrefix(l, "-# "):
			fmt.Fprintf(&b, "<p class=subtext>%s</p>", l[3:])
		case strings.HasPrefix(l, "&gt; "):
			fmt.Fprintf(&b, "<blockquote>%s</blockquote>", l[5:])
		case strings.HasPrefix(l, "- "), strings.HasPrefix(l, "• "):
			fmt.Fprintf(&b, "<p class=item>• %s</p>", strings.TrimPrefix(strings.TrimPrefix(l, "- "), "• "))
		case strings.TrimSpace(l) == "":
			b.WriteString("<p class=gap></p>")
		default:
			fmt.Fprintf(&b, "<p>%s</p>", l)
		}
	}
	return b.String()
}

const threadPageHead = `<!doctype html>
<html><head><meta charset="utf-8"><title>A callon team thread</title>
<style>
body { margin: 0; background: #313338; color: #dbdee1; font: 16px/1.375 "gg sans", "Noto Sans", "Helvetica Neue", Arial, sans-serif; width: 900px; }
header { padding: 12px 16px; border-bottom: 1px solid #1f2023; font-weight: 600; color: #f2f3f5; box-shadow: 0 1px 0 rgba(4,4,5,.2); }
header .hash { color: #80848e; font-size: 22px; margin-right: 6px; }
main { padding: 8px 0 16px; }
article { display: grid; grid-template-columns: 56px 1fr; padding: 4px 48px 6px 16px; margin-top: 14px; }
.replyto { grid-column: 2; color: #b5bac1; font-size: 14px; margin-bottom: 2px; white-space: nowrap; overflow: hidden; }
.replyto b { color: #949cf7; font-weight: 500; margin-right: 4px; }
.avatar { width: 40px; height: 40px; border-radius: 50%; display: flex; align-items: center; justify-content: center; font-weight: 700; color: #fff; grid-row: span 2; }
.avatar.c { background: #5865f2; } .avatar.a { background: #3ba55c; }
.meta { line-height: 22px; }
.name { font-weight: 500; margin-right: 4px; } .name.c { color: #949cf7; } .name.a { color: #57f287; }
.tag { background: #5865f2; color: #fff; font-size: 10px; font-weight: 600; padding: 1px 4px; border-radius: 3px; margin-right: 6px; vertical-align: 2px; }
.time { color: #949ba4; font-size: 12px; }
p { margin: 0; white-space: pre-wrap; } p.gap { height: 8px; }
p.subtext { color: #949ba4; font-size: 13px; }
p.item { padding-left: 8px; }
strong { color: #f2f3f5; }
code { background: #2b2d31; border: 1px solid #1e1f22; border-radius: 4px; padding: 0 3px; font-size: 85%; font-family: Consolas, "Liberation Mono", monospace; }
blockquote { margin: 4px 0; padding: 0 8px 0 12px; border-left: 4px solid #4e5058; }
.mention { background: rgba(88,101,242,.3); color: #c9cdfb; border-radius: 3px; padding: 0 2px; }
footer { margin: 0 16px 20px; padding: 11px 16px; background: #383a40; border-radius: 8px; color: #6d6f78; }
</style></head><body>
`
