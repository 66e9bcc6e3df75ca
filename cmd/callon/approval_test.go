package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

// callThenReport is a worker that makes call unless it has just been
// shown a tool's result, which it then reports: it answers the same way
// however often its task is run again.
func callThenReport(call llmtest.Reply) llmtest.Script {
	return func(r llmtest.Request) llmtest.Reply {
		if len(r.ToolResults()) > 0 {
			return report("TOOL SAID: " + lastToolResult(r))
		}
		return call
	}
}

// masterFor is a master that, for each message, delegates one task to
// the engineer and replies with the results it was shown.
func masterFor(messages int) llmtest.Script {
	var steps []llmtest.Script
	for i := range messages {
		steps = append(steps,
			func(llmtest.Request) llmtest.Reply {
				return delegate(task{Role: "engineer", Instruction: fmt.Sprintf("count %d", i)})
			},
			func(r llmtest.Request) llmtest.Reply { return reply("Merged:\n" + toolResults(r)) })
	}
	return llmtest.SeqFunc(steps...)
}

// approvalWorld is a world (not started) whose engineer may use the
// tools of the mcptest server "ops", whose counter tool needs approval,
// and calls it for each of messages. It returns the counter's file.
func approvalWorld(t *testing.T, messages int, env ...string) (*world, string) {
	t.Helper()
	counter := filepath.Join(t.TempDir(), "counter")
	w := newWorld(t, discordtest.New(t), llmtest.Switch(
		llmtest.Match(masterPrompt, masterFor(messages)),
		llmtest.Match("You are the engineer", callThenReport(llmtest.Call("ops__counter", map[string]any{}))),
	), env...)
	w.withRolesFile(fmt.Sprintf(`
mcp_servers:
  ops:
    command: [%q]
    guilds: all
    env: {MCPTEST_COUNTER_FILE: %q}
    approval: [counter]
roles:
  - name: engineer
    description: Runs things
    prompt: You run things.
    tools: [ops.*]
`, mcpServerBin, counter))
	return w, counter
}

// approvalRequest waits for the n-th request for approval in a thread
// (from 1) and returns it with the custom_ids of its buttons.
func (w *world) approvalRequest(thread string, n int) (msg discordtest.Message, approve, deny string) {
	w.t.Helper()
	w.dc.WaitFor(w.t, func() bool {
		var found []discordtest.Message
		for _, m := range w.botMessages(thread) {
			if strings.HasPrefix(m.Content, "🔐") {
				found = append(found, m)
			}
		}
		if len(found) < n {
			return false
		}
		msg = found[n-1]
		return true
	}, "a request for approval")
	for _, b := range msg.Buttons() {
		switch {
		case strings.HasPrefix(b.CustomID, "approve:"):
			approve = b.CustomID
		case strings.HasPrefix(b.CustomID, "deny:"):
			deny = b.CustomID
		}
	}
	return msg, approve, deny
}

// settled waits for a request's message to show its outcome, without
// buttons, and returns its text.
func (w *world) settled(thread, id string) string {
	w.t.Helper()
	var text string
	w.dc.WaitFor(w.t, func() bool {
		m, ok := w.dc.Message(thread, id)
		text = m.Content
		return ok && len(m.Buttons()) == 0 && m.Edits > 0
	}, "the request's message to show the decision")
	return text
}

// A call that needs approval pauses its task and posts one request
// naming the role, the tool and its arguments, pinging nobody. A member
// who did not start the team and cannot manage threads is refused,
// ephemerally; the owner approves: the message shows who, its buttons
// go, and the call is made once. Next, a member who can manage threads
// denies: the model reads the denial and nothing is called.
func TestApprovalApprovedRefusedAndDenied(t *testing.T) {
	t.Parallel()
	w, counter := approvalWorld(t, 2)
	w.start()
	thread := w.team("Count carefully")
	msg := w.say(thread, "count once")
	req, approve, deny := w.approvalRequest(thread, 1)
	mustContain(t, "request", req.Content, "**engineer** asks to call `ops.counter` with:\n```json\n{}\n```", "can approve or deny")
	if approve == "" || deny == "" {
		t.Fatalf("request buttons %+v, want Approve and Deny", req.Buttons())
	}
	if am := req.AllowedMentions; am == nil || len(am.Parse) != 0 || len(am.Users) != 0 || len(am.Roles) != 0 {
		t.Errorf("request allowed mentions %+v, want none", am)
	}
	if sigs := w.signals(thread); !hasSignal(sigs, "NEED_APPROVAL", `"tool":"ops__counter"`) {
		t.Errorf("no NEED_APPROVAL signal:\n%s", strings.Join(sigs, "\n"))
	}
	status := w.statusOf(thread, "waits for approval")
	mustContain(t, "status message", status, "**engineer** — waits for approval · `ops.counter`")

	bystander := w.dc.AddUser("bystander")
	ix := w.dc.ClickButton(t, discordtest.ClickButton{MessageID: req.ID, CustomID: approve, ChannelID: thread, UserID: bystander, Permissions: member})
	w.dc.WaitFor(t, func() bool { return len(ix.Followups()) > 0 }, "the refusal")
	if f := ix.Followups()[0]; !f.Ephemeral || !strings.Contains(f.Content, "Only the member who started this team") {
		t.Errorf("refusal %+v, want an ephemeral message", f)
	}
	if m, _ := w.dc.Message(thread, req.ID); len(m.Buttons()) != 2 || m.Edits != 0 {
		t.Errorf("after the refusal the request is %+v, want it unchanged", m)
	}

	w.dc.ClickButton(t, discordtest.ClickButton{MessageID: req.ID, CustomID: approve, ChannelID: thread, Permissions: member})
	mustContain(t, "approved request", w.settled(thread, req.ID), "✅ Approved by <@"+w.dc.UserID()+">")
	mustContain(t, "reply", w.waitReply(thread, msg), "TOOL SAID: call 1 by process")
	if n := counterLines(t, counter); n != 1 {
		t.Errorf("the counter ran %d times, want once", n)
	}

	msg = w.say(thread, "count again")
	req, _, deny = w.approvalRequest(thread, 2)
	moderator := w.dc.AddUser("moderator")
	w.dc.ClickButton(t, discordtest.ClickButton{MessageID: req.ID, CustomID: deny, ChannelID: thread, UserID: moderator,
		Permissions: member | discordgo.PermissionManageThreads})
	mustContain(t, "denied request", w.settled(thread, req.ID), "⛔ Denied by <@"+moderator+">")
	mustContain(t, "reply", w.waitReply(thread, msg), "TOOL SAID: A person denied this call")
	if n := counterLines(t, counter); n != 1 {
		t.Errorf("the counter ran %d times in all, want once: the denied call was made", n)
	}
	if sigs := w.signals(thread); !hasSignal(sigs, "TOOL", `"ok":false`) {
		t.Errorf("the denied call has no TOOL signal:\n%s", strings.Join(sigs, "\n"))
	}
}

// statusOf waits for the thread's status message to contain part and
// returns it.
func (w *world) statusOf(thread, part string) string {
	w.t.Helper()
	var text string
	w.dc.WaitFor(w.t, func() bool {
		for _, m := range w.botMessages(thread) {
			if strings.HasPrefix(m.Content, "⏳") && strings.Contains(m.Content, part) {
				text = m.Content
				return true
			}
		}
		return false
	}, "a status message with "+part)
	return text
}

// Undecided after CALLON_APPROVAL_TIMEOUT, a request counts as denied:
// the task reads so, and the message shows it without buttons.
func TestApprovalTimesOut(t *testing.T) {
	t.Parallel()
	w, counter := approvalWorld(t, 1, "CALLON_APPROVAL_TIMEOUT", "1s")
	w.start()
	thread := w.team("Count patiently")
	msg := w.say(thread, "count")
	req, _, _ := w.approvalRequest(thread, 1)
	mustContain(t, "reply", w.waitReply(thread, msg), "TOOL SAID: Nobody approved this call in time")
	mustContain(t, "expired request", w.settled(thread, req.ID), "Nobody decided in time")
	if n := counterLines(t, counter); n != 0 {
		t.Errorf("the counter ran %d times, want never", n)
	}
}

// The decision is durable: with the workers' process stopped and the
// bot's restarted, an approval is recorded, and a worker process started
// afterwards resumes the task and makes the call, once.
func TestApprovalSurvivesARestart(t *testing.T) {
	t.Parallel()
	w, counter := approvalWorld(t, 1, "CALLON_CONCURRENT_TASKS", "0")
	w.start()
	stopWorker := w.startWorker()
	thread := w.team("Count across restarts")
	msg := w.say(thread, "count")
	req, approve, _ := w.approvalRequest(thread, 1)
	stopWorker()
	w.restart()
	w.dc.ClickButton(t, discordtest.ClickButton{MessageID: req.ID, CustomID: approve, ChannelID: thread, Permissions: member})
	mustContain(t, "approved request", w.settled(thread, req.ID), "✅ Approved by")
	w.startWorker()
	mustContain(t, "reply", w.waitReply(thread, msg), "TOOL SAID: call 1 by process")
	if n := counterLines(t, counter); n != 1 {
		t.Errorf("the counter ran %d times, want once", n)
	}
}

// A task run again after its process was killed does not repeat a call
// whose result is recorded: the side-effecting counter tool runs once,
// and the worker that takes over reads its recorded result.
func TestNoRepeatedCallAfterACrash(t *testing.T) {
	t.Parallel()
	counter := filepath.Join(t.TempDir(), "counter")
	held := make(chan struct{})    // the doomed process's worker has the tool's result
	release := make(chan struct{}) // closed once it is dead
	var once sync.Once
	worker := func(r llmtest.Request) llmtest.Reply {
		if len(r.ToolResults()) == 0 {
			return llmtest.Call("ops__counter", map[string]any{})
		}
		first := false
		once.Do(func() { first = true })
		if first {
			close(held)
			<-release
		}
		return report("TOOL SAID: " + lastToolResult(r))
	}
	w := newWorld(t, discordtest.New(t), llmtest.Switch(
		llmtest.Match(masterPrompt, masterFor(1)),
		llmtest.Match("You are the engineer", worker)))
	w.withRolesFile(fmt.Sprintf(`
mcp_servers:
  ops:
    command: [%q]
    guilds: all
    env: {MCPTEST_COUNTER_FILE: %q}
roles:
  - {name: engineer, description: Runs things, prompt: You run things., tools: [ops.counter]}
`, mcpServerBin, counter))
	kill := w.spawn()
	w.dc.WaitConnected(t)
	w.dc.WaitFor(t, func() bool { return len(w.dc.Commands("")) == commandCount }, "the commands registered")
	thread := w.team("Count once, whatever happens")
	msg := w.say(thread, "count")
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the first process never got the tool's result")
	}
	w.start() // the survivor
	kill()
	close(release)
	got := w.waitReply(thread, msg)
	mustContain(t, "reply", got, "TOOL SAID: call 1 by process")
	if n := counterLines(t, counter); n != 1 {
		t.Errorf("the counter ran %d times, want once", n)
	}
	if sigs := w.signals(thread); !hasSignal(sigs, "ACK", `"attempt":2`) {
		t.Errorf("the task was not run again by the survivor:\n%s", strings.Join(sigs, "\n"))
	}
}

// An approval request shows every argument: in the message when they
// fit, else the first lines there and all of them attached as
// arguments.json. Where the operator names approvers, the team's owner
// cannot approve their own team's calls, nor can a thread manager; a
// member with the approvers' role can. Arguments with a key given twice
// are refused before anyone is asked. (The request used to cut the
// arguments to 600 characters, so a second "path" after padding was
// never seen, and the owner approved their own calls.)
func TestApprovalShowsEveryArgumentToItsApprovers(t *testing.T) {
	t.Parallel()
	tail := "/home/callon/.ssh/authorized_keys"
	long := strings.Repeat("pad ", 600) + tail
	dup := `{"text":"/srv/notes/pricing.md","pad":"` + strings.Repeat(" ", 700) + `","text":"` + tail + `"}`
	dc := discordtest.New(t)
	approvers := dc.AddRole(dc.GuildID(), "approvers", 0)
	w := newWorld(t, dc, llmtest.Switch(
		llmtest.Match(masterPrompt, masterFor(2)),
		llmtest.Match("You are the engineer", func(r llmtest.Request) llmtest.Reply {
			switch {
			case len(r.ToolResults()) > 0:
				return report("TOOL SAID: " + lastToolResult(r))
			case strings.Contains(r.LastUser(), "count 0"):
				return llmtest.Call("ops__echo", map[string]any{"text": long})
			}
			return llmtest.RawCall("ops__echo", dup)
		})))
	w.withRolesFile(fmt.Sprintf(`
mcp_servers:
  ops:
    command: [%q]
    guilds: all
    approval: required
    approvers: [%q]
roles:
  - {name: engineer, description: Runs things, prompt: You run things., tools: [ops.*]}
`, mcpServerBin, approvers))
	w.start()
	thread := w.team("Echo carefully")
	msg := w.say(thread, "echo it")
	req, approve, _ := w.approvalRequest(thread, 1)
	mustContain(t, "request", req.Content, "`ops.echo`", "every argument is in the attached `arguments.json`",
		"A member with <@&"+approvers+"> (never the member who started the team) can approve or deny it")
	if strings.Contains(req.Content, tail) {
		t.Errorf("the message shows the arguments' end, want it in the file: %q", req.Content)
	}
	if len(req.Attachments) != 1 || req.Attachments[0].Filename != "arguments.json" || !strings.Contains(string(req.Attachments[0].Data), tail) {
		t.Fatalf("attachments %+v, want arguments.json with every argument", req.Attachments)
	}
	// The owner may not approve their own team's call, nor a moderator.
	for _, who := range []struct {
		user  string
		perms int64
	}{{w.dc.UserID(), member | discordgo.PermissionAdministrator}, {w.dc.AddUser("mod"), member | discordgo.PermissionManageThreads}} {
		ix := w.dc.ClickButton(t, discordtest.ClickButton{MessageID: req.ID, CustomID: approve, ChannelID: thread, UserID: who.user, Permissions: who.perms})
		w.dc.WaitFor(t, func() bool { return len(ix.Followups()) > 0 }, "the refusal")
		if f := ix.Followups()[0]; !f.Ephemeral || !strings.Contains(f.Content, "decided by the members the operator named") {
			t.Errorf("refusal %+v", f)
		}
	}
	ann := w.dc.AddUser("ann")
	w.dc.SetMemberRoles(w.dc.GuildID(), ann, approvers)
	w.dc.ClickButton(t, discordtest.ClickButton{MessageID: req.ID, CustomID: approve, ChannelID: thread, UserID: ann, Permissions: member})
	mustContain(t, "approved request", w.settled(thread, req.ID), "✅ Approved by <@"+ann+">")
	mustContain(t, "reply", w.waitReply(thread, msg), "TOOL SAID: pad pad")

	// Two keys "text": refused, nothing asked.
	msg = w.say(thread, "echo again")
	mustContain(t, "reply", w.waitReply(thread, msg), `Not made: the arguments give the key "text" twice`)
	for _, m := range w.botMessages(thread) {
		if strings.HasPrefix(m.Content, "🔐") && m.ID != req.ID {
			t.Errorf("a request was posted for arguments with a key twice: %q", m.Content)
		}
	}
}

// A click that lands after the request expired, in a process whose
// sweeper has not expired it yet, approves nothing: the message says it
// expired, the clicker is told, and the call is never made. (Only the
// sweeper enforced the expiry, and only where workers run.)
func TestLateClickApprovesNothing(t *testing.T) {
	t.Parallel()
	w, counter := approvalWorld(t, 1, "CALLON_APPROVAL_TIMEOUT", "1s", "CALLON_SWEEP_INTERVAL", "1h", "CALLON_TASK_LEASE", "1h")
	w.start()
	thread := w.team("Count late")
	msg := w.say(thread, "count")
	req, approve, _ := w.approvalRequest(thread, 1)
	w.dc.WaitFor(t, func() bool { return w.count(`SELECT count(*)::int FROM approvals WHERE expires_at < now()`) == 1 }, "the request to expire")
	if n := w.count(`SELECT count(*)::int FROM approvals WHERE state = 'pending'`); n != 1 {
		t.Fatalf("%d pending requests, want the expired one still pending (no sweep)", n)
	}
	ix := w.dc.ClickButton(t, discordtest.ClickButton{MessageID: req.ID, CustomID: approve, ChannelID: thread, Permissions: member})
	w.dc.WaitFor(t, func() bool { return len(ix.Followups()) > 0 }, "the answer to the late click")
	mustContain(t, "late click", ix.Followups()[0].Content, "had expired: nothing was approved")
	mustContain(t, "expired request", w.settled(thread, req.ID), "Nobody decided in time")
	mustContain(t, "reply", w.waitReply(thread, msg), "TOOL SAID: Nobody approved this call in time")
	if n := counterLines(t, counter); n != 0 {
		t.Errorf("the counter ran %d times, want never", n)
	}
}
