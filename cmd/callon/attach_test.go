package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

// setupCDN starts callon with its fake Discord's CDN as DISCORD_CDN_URL,
// so the files users attach are downloaded from it.
func setupCDN(t *testing.T, script llmtest.Script, env ...string) *world {
	t.Helper()
	dc := discordtest.New(t)
	return setupWith(t, dc, script, append([]string{"DISCORD_CDN_URL", dc.CDNURL()}, env...)...)
}

// attach posts a message with files from the default user.
func (w *world) attach(channelID, text string, files ...discordtest.UserAttachment) discordtest.Message {
	return w.dc.UserMessageWith(channelID, w.dc.UserID(), text, files...)
}

// delegateWith is a delegate call whose tasks name files.
func delegateWith(role, instruction string, files ...string) llmtest.Reply {
	return llmtest.Call("delegate", map[string]any{"tasks": []map[string]any{
		{"role": role, "instruction": instruction, "attachments": files}}})
}

// scriptCalls records the requests a script was called with.
type scriptCalls struct {
	mu   sync.Mutex
	reqs []llmtest.Request
}

func (r *scriptCalls) add(req llmtest.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
}

func (r *scriptCalls) all() []llmtest.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]llmtest.Request(nil), r.reqs...)
}

// A text file is downloaded once, shown to the master as text, handed to
// a worker by name, and shown to it the same way.
func TestTextAttachmentReachesTheMasterAndAWorker(t *testing.T) {
	t.Parallel()
	var masters, workers scriptCalls
	w := setupCDN(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(r llmtest.Request) llmtest.Reply {
				masters.add(r)
				return delegateWith("researcher", "Summarize the notes", "notes.md")
			},
			func(r llmtest.Request) llmtest.Reply {
				masters.add(r)
				return reply("The notes say the beta launches in May.")
			})),
		llmtest.Match("You are the researcher", llmtest.SeqFunc(func(r llmtest.Request) llmtest.Reply {
			workers.add(r)
			return report("Launch in May (NOTE-42).")
		}))))
	thread := w.team("Plan the beta launch")
	msg := w.attach(thread, "what do my notes say?",
		discordtest.UserAttachment{Filename: "notes.md", ContentType: "text/markdown", Data: []byte("# Beta\nLaunch in May. NOTE-42\n")})
	if got := w.waitReply(thread, msg); got != "The notes say the beta launches in May." {
		t.Errorf("reply = %q, want the merged answer and no note about files", got)
	}
	ms, ws := masters.all(), workers.all()
	if len(ms) != 2 || len(ws) != 1 {
		t.Fatalf("got %d master and %d worker calls, want 2 and 1", len(ms), len(ws))
	}
	for i, r := range ms {
		if u := r.LastUser(); !strings.Contains(u, "what do my notes say?") || !strings.Contains(u, "notes.md (text/markdown, 30 bytes):") ||
			!strings.Contains(u, "Launch in May. NOTE-42") {
			t.Errorf("master call %d: the user's message lacks the file:\n%s", i, u)
		}
	}
	if enum := ms[0].ToolEnum("delegate", "tasks", "attachments"); len(enum) != 1 || enum[0] != "notes.md" {
		t.Errorf("delegate offers files %v, want [notes.md]", enum)
	}
	if u := ws[0].LastUser(); !strings.HasPrefix(u, "Summarize the notes") || !strings.Contains(u, "----- begin notes.md -----\n# Beta\nLaunch in May. NOTE-42\n----- end notes.md -----") {
		t.Errorf("the worker's message lacks the file:\n%s", u)
	}
	if n := w.dc.AttachmentDownloads(msg.Attachments[0].ID); n != 1 {
		t.Errorf("the file was downloaded %d times, want once", n)
	}
}

// A message with a file and no text starts a turn, answered once, even
// when Discord delivers it twice.
func TestAttachmentOnlyMessageIsAnsweredOnce(t *testing.T) {
	t.Parallel()
	w := setupCDN(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.SeqFunc(echoLast, echoLast))))
	thread := w.team("Files only")
	msg := w.attach(thread, "", discordtest.UserAttachment{Filename: "todo.txt", Data: []byte("buy milk")})
	w.dc.Redeliver(msg)
	got := w.waitReply(thread, msg)
	if !strings.Contains(got, "(no text: only files)") || !strings.Contains(got, "todo.txt") || !strings.Contains(got, "buy milk") {
		t.Errorf("reply = %q, want the master's echo of a files-only message with the file", got)
	}
	next := w.say(thread, "thanks")
	w.waitReply(thread, next) // turns are answered in order: a second turn for msg would come first
	if n := len(w.reply(thread, msg)); n != 1 {
		t.Errorf("got %d replies to the message, want 1", n)
	}
	if n := len(w.ai.Requests()); n != 2 {
		t.Errorf("got %d master calls, want 2: one per message", n)
	}
	if n := w.dc.AttachmentDownloads(msg.Attachments[0].ID); n != 1 {
		t.Errorf("the file was downloaded %d times, want once", n)
	}
}

// With DISCORD_CDN_URL left at Discord's CDN, the fake's files are
// outside it: never fetched, and the reply says so whatever the model
// wrote.
func TestAttachmentOutsideTheCDNIsNeverFetched(t *testing.T) {
	t.Parallel()
	var masters scriptCalls
	w := setup(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.SeqFunc(func(r llmtest.Request) llmtest.Reply {
		masters.add(r)
		return reply("Noted.")
	}))))
	thread := w.team("Outside")
	msg := w.attach(thread, "here is the plan", discordtest.UserAttachment{Filename: "plan.txt", Data: []byte("SECRET PLAN")})
	got := w.waitReply(thread, msg)
	if !strings.HasPrefix(got, "Noted.") || !strings.Contains(got, "plan.txt (11 bytes): its address is not on Discord's CDN, so it was not fetched") {
		t.Errorf("reply = %q, want the master's text and a line naming the file not read", got)
	}
	if u := masters.all()[0].LastUser(); strings.Contains(u, "SECRET PLAN") || !strings.Contains(u, "plan.txt (text/plain, 11 bytes): not read") {
		t.Errorf("the master was shown:\n%s\nwant the file named as not read", u)
	}
	if n := w.dc.AttachmentDownloads(msg.Attachments[0].ID); n != 0 {
		t.Errorf("the file was downloaded %d times, want never", n)
	}
}

// A file over the size limit is never downloaded, and the reply names it.
func TestOversizeAttachmentIsMentioned(t *testing.T) {
	t.Parallel()
	w := setupCDN(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.Seq(reply("I read ok.txt.")))), "CALLON_ATTACHMENT_MAX_FILE", "1KB")
	thread := w.team("Sizes")
	msg := w.attach(thread, "two files",
		discordtest.UserAttachment{Filename: "big.log", ContentType: "text/plain", Data: []byte(strings.Repeat("x", 4096))},
		discordtest.UserAttachment{Filename: "ok.txt", ContentType: "text/plain", Data: []byte("fine")})
	got := w.waitReply(thread, msg)
	if !strings.HasPrefix(got, "I read ok.txt.") || !strings.Contains(got, "big.log (4 KB): larger than the 1 KB limit per file") {
		t.Errorf("reply = %q, want a line naming big.log as too large", got)
	}
	if strings.Count(got, "ok.txt") != 1 {
		t.Errorf("reply = %q, want ok.txt (which was read) named once, by the model", got)
	}
	big, ok := msg.Attachments[0], msg.Attachments[1]
	if n := w.dc.AttachmentDownloads(big.ID); n != 0 {
		t.Errorf("the oversize file was downloaded %d times, want never", n)
	}
	if n := w.dc.AttachmentDownloads(ok.ID); n != 1 {
		t.Errorf("the small file was downloaded %d times, want once", n)
	}
}

// pngHeader is enough of a PNG for content sniffing.
var pngHeader = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00")

// An image is an image part for a model marked vision-capable (here the
// workers') and a note naming it for another (here the master's).
func TestImageGoesToAVisionModelAndIsNamedToAnother(t *testing.T) {
	t.Parallel()
	var masters, workers scriptCalls
	w := setupCDN(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(r llmtest.Request) llmtest.Reply {
				masters.add(r)
				return delegateWith("researcher", "Describe the picture", "photo.png")
			},
			func(r llmtest.Request) llmtest.Reply { return reply("It is a cat.") })),
		llmtest.Match("You are the researcher", llmtest.SeqFunc(func(r llmtest.Request) llmtest.Reply {
			workers.add(r)
			return report("A cat.")
		}))),
		"CALLON_MASTER_MODEL", "blind-model", "CALLON_WORKER_MODEL", "seeing-model", "CALLON_VISION_MODELS", "seeing-model")
	thread := w.team("Pictures")
	msg := w.attach(thread, "what is this?", discordtest.UserAttachment{Filename: "photo.png", ContentType: "image/png", Data: pngHeader})
	if got := w.waitReply(thread, msg); got != "It is a cat." {
		t.Errorf("reply = %q, want the answer and no note: a worker saw the image", got)
	}
	m := masters.all()[0]
	for _, msg := range m.Messages {
		if len(msg.Images) > 0 {
			t.Errorf("the master's model (not vision-capable) was given %d images", len(msg.Images))
		}
	}
	if u := m.LastUser(); !strings.Contains(u, fmt.Sprintf("photo.png (image/png, %d bytes): an image; your model cannot see images", len(pngHeader))) {
		t.Errorf("the master was shown:\n%s\nwant a note naming the image", u)
	}
	ws := workers.all()
	if len(ws) != 1 || ws[0].Model != "seeing-model" {
		t.Fatalf("worker calls = %d, want one to seeing-model", len(ws))
	}
	last := ws[0].Messages[len(ws[0].Messages)-1]
	if len(last.Images) != 1 || !strings.HasPrefix(last.Images[0], "data:image/png;base64,iVBORw0KGgo") {
		t.Errorf("the worker's message has images %v, want photo.png as a data URL", last.Images)
	}
	if !strings.Contains(last.Content, fmt.Sprintf("photo.png (image/png, %d bytes): an image, attached to this message.", len(pngHeader))) {
		t.Errorf("the worker's message:\n%s\nwant the image named as attached", last.Content)
	}
}

// A message that starts with @role is marked for the master, which
// delegates to that role.
func TestAddressedMessageIsDelegatedToItsRole(t *testing.T) {
	t.Parallel()
	const mark = "The user addressed this message to planner: delegate it to planner unless you have a reason not to"
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(r llmtest.Request) llmtest.Reply {
				if !strings.Contains(r.System(), mark) {
					return reply("NOT MARKED")
				}
				return delegate(task{Role: "planner", Instruction: "Draft the timeline"})
			},
			func(r llmtest.Request) llmtest.Reply { return reply("The planner drafted it.") })),
		llmtest.Match("You are the planner", llmtest.Seq(report("Week 1: …")))))
	thread := w.team("Timeline")
	msg := w.say(thread, "@Planner draft the timeline")
	if got := w.waitReply(thread, msg); got != "The planner drafted it." {
		t.Errorf("reply = %q, want the planner's work merged", got)
	}
	if n := len(workerRequests(w.ai.Requests(), "planner")); n != 1 {
		t.Errorf("planner called %d times, want once", n)
	}
}

// A message with a file posted while callon was away is caught up with
// its file.
func TestCaughtUpMessageKeepsItsFiles(t *testing.T) {
	t.Parallel()
	w := setupCDN(t, llmtest.Switch(llmtest.Match(masterPrompt, llmtest.SeqFunc(echoLast, echoLast))))
	thread := w.team("Away with files")
	first := w.say(thread, "one")
	w.waitReply(thread, first)
	w.stop()
	msg := w.attach(thread, "two", discordtest.UserAttachment{Filename: "away.csv", ContentType: "text/csv", Data: []byte("a,b\n1,2")})
	w.start()
	if got := w.waitReply(thread, msg); !strings.Contains(got, "away.csv (text/csv, 7 bytes)") || !strings.Contains(got, "a,b\n1,2") {
		t.Errorf("reply = %q, want the master's echo with the file", got)
	}
	if n := w.dc.AttachmentDownloads(msg.Attachments[0].ID); n != 1 {
		t.Errorf("the file was downloaded %d times, want once", n)
	}
	if !w.logged("caught up on missed messages", "recorded=1") {
		t.Error("the message was not recorded by the catch-up")
	}
}
