package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/master"
)

// plan records calls for a claimed task and fails the test on an error.
func (w *world) plan(tk master.Task, step int, calls ...master.PlannedCall) []master.CallRecord {
	w.t.Helper()
	recs, err := w.store.PlanToolCalls(w.ctx, tk.ID, tk.Attempt, step, calls)
	if err != nil {
		w.t.Fatalf("PlanToolCalls: %v", err)
	}
	return recs
}

func (w *world) calls(taskID int64) []master.CallRecord {
	w.t.Helper()
	recs, err := w.store.ToolCalls(w.ctx, taskID)
	if err != nil {
		w.t.Fatalf("ToolCalls: %v", err)
	}
	return recs
}

func planned(id, name, args string) master.PlannedCall {
	return master.PlannedCall{CallID: id, Name: name, Args: args}
}

// A task's calls are numbered across its steps and attempts; each is
// started, then done with its result and a TOOL signal; every write is
// guarded by the attempt.
func TestToolCallsAreRecordedAndGuarded(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	w.enqueue(session, task("researcher", "look it up"))
	tk := w.claim("w1", 1)[0]

	first := w.plan(tk, 0, planned("c1", "fetch_url", `{"url":"https://example.com"}`), planned("c2", "fs__read", `{}`))
	second := w.plan(tk, 2, planned("c3", "fs__read", `{"path":"/x"}`))
	if first[0].Seq != 0 || first[1].Seq != 1 || second[0].Seq != 2 || second[0].Step != 2 {
		t.Fatalf("planned %+v then %+v, want seqs 0, 1 then 2 at step 2", first, second)
	}
	if err := w.store.StartToolCall(w.ctx, tk.ID, tk.Attempt, 0); err != nil {
		t.Fatalf("StartToolCall: %v", err)
	}
	if err := w.store.StartToolCall(w.ctx, tk.ID, tk.Attempt, 0); !errors.Is(err, master.ErrStale) {
		t.Errorf("StartToolCall twice: got %v, want ErrStale", err)
	}
	res := master.ToolResult{Text: "URL: https://example.com\n\nhello", Duration: 1500 * time.Millisecond, Size: 31}
	if err := w.store.RecordToolCall(w.ctx, tk.ID, tk.Attempt, 0, res); err != nil {
		t.Fatalf("RecordToolCall: %v", err)
	}
	if err := w.store.RecordToolCall(w.ctx, tk.ID, tk.Attempt, 1, master.ToolResult{Text: "no such file", IsError: true}); err != nil {
		t.Fatalf("RecordToolCall of a planned call: %v", err)
	}
	if err := w.store.RecordToolCall(w.ctx, tk.ID, tk.Attempt, 0, res); !errors.Is(err, master.ErrStale) {
		t.Errorf("RecordToolCall twice: got %v, want ErrStale", err)
	}
	if err := w.store.RecordToolCall(w.ctx, tk.ID, tk.Attempt+1, 2, res); !errors.Is(err, master.ErrStale) {
		t.Errorf("RecordToolCall of another attempt: got %v, want ErrStale", err)
	}
	if _, err := w.store.PlanToolCalls(w.ctx, tk.ID, tk.Attempt+1, 3, []master.PlannedCall{planned("c4", "x__y", "{}")}); !errors.Is(err, master.ErrStale) {
		t.Errorf("PlanToolCalls of another attempt: got %v, want ErrStale", err)
	}

	got := w.calls(tk.ID)
	if len(got) != 3 || got[0].State != master.CallDone || got[0].Result != res.Text || got[0].IsError ||
		got[1].State != master.CallDone || !got[1].IsError || got[2].State != master.CallPlanned || got[2].Args != `{"path":"/x"}` {
		t.Errorf("ToolCalls = %+v, want two done (the second an error) and one planned", got)
	}
	var tools []map[string]any
	for _, s := range w.signals(session) {
		if s.Kind == master.SignalTool {
			var p map[string]any
			if err := json.Unmarshal(s.Payload, &p); err != nil {
				t.Fatal(err)
			}
			tools = append(tools, p)
		}
	}
	if len(tools) != 2 || tools[0]["tool"] != "fetch_url" || tools[0]["ok"] != true || tools[0]["duration_ms"] != 1500.0 ||
		tools[0]["size"] != 31.0 || !strings.Contains(tools[0]["args"].(string), "example.com") ||
		tools[1]["ok"] != false || tools[1]["error"] != "no such file" {
		t.Errorf("TOOL signals = %v, want one per recorded call with its tool, arguments, duration, outcome and size", tools)
	}
}

// ask is the request for call c of tk as the worker pool makes it: its
// message rendered by bot/render (the store renders nothing).
func ask(tk master.Task, c master.CallRecord, timeout time.Duration, approvers []string) master.ApprovalAsk {
	a := master.Approval{Role: tk.Role, Tool: c.Name, Args: c.Args, Approvers: approvers, State: master.ApprovalPending,
		ExpiresAt: time.Now().Add(timeout)}
	text, file := render.Ask(a)
	return master.ApprovalAsk{Approvers: approvers, Timeout: timeout, Text: text, File: file}
}

// pauseForApproval plans one call of a claimed task and pauses the task
// for a person's approval of it.
func (w *world) pauseForApproval(tk master.Task, timeout time.Duration) int64 {
	w.t.Helper()
	recs := w.plan(tk, 0, planned("c1", "fs__write", `{"path":"/data/x","text":"@everyone hi"}`))
	id, err := w.store.PauseForApproval(w.ctx, tk.ID, tk.Attempt, recs[0].Seq, ask(tk, recs[0], timeout, nil))
	if err != nil {
		w.t.Fatalf("PauseForApproval: %v", err)
	}
	return id
}

// A paused task holds no lease, is not swept, keeps its round open, and
// is queued again, with fresh attempts, once a person decides; the
// request's message is queued with its buttons; only one decision counts.
func TestApprovalPausesAndResumesTheTask(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	w.enqueue(session, task("engineer", "write the file"))
	tk := w.claim("w1", 1)[0]
	id := w.pauseForApproval(tk, time.Hour)

	paused := w.task(tk.ID)
	if paused.State != master.TaskApproval || paused.WorkerID != "" || !paused.LeaseUntil.IsZero() || !paused.EndedAt.IsZero() {
		t.Fatalf("paused task = %+v, want state approval, no lease, open", paused)
	}
	if _, _, err := w.store.SweepExpired(w.ctx); err != nil {
		t.Fatal(err)
	}
	if got := w.task(tk.ID).State; got != master.TaskApproval {
		t.Errorf("after a sweep the paused task is %s, want still approval", got)
	}
	if _, err := w.pool.Exec(w.ctx, `UPDATE turns SET round = 1 WHERE id = $1`, paused.TurnID); err != nil {
		t.Fatal(err)
	}
	if pending, err := w.store.PendingSessions(w.ctx, master.Scope{}, "m"); err != nil || len(pending) != 0 {
		t.Errorf("PendingSessions = %v, %v: the round must wait for the paused task", pending, err)
	}
	var content, buttons, kind string
	if err := w.pool.QueryRow(w.ctx, `SELECT o.content, o.buttons::text, o.kind FROM outbox o JOIN approvals a ON a.outbox_id = o.id
		WHERE a.id = $1`, id).Scan(&content, &buttons, &kind); err != nil {
		t.Fatal(err)
	}
	if kind != "approval" || !strings.Contains(content, "**engineer** asks to call `fs.write`") || !strings.Contains(buttons, "approve:") ||
		!strings.Contains(buttons, "deny:") {
		t.Errorf("request message %s %q with buttons %s, want the role, the tool and Approve and Deny", kind, content, buttons)
	}
	if !strings.Contains(content, "```json\n{\n  \"path\": \"/data/x\",\n  \"text\": \"@everyone hi\"\n}\n```") {
		t.Errorf("the arguments are not shown in full, in a code block: %q", content)
	}
	var need int
	for _, s := range w.signals(session) {
		if s.Kind == master.SignalNeedApproval && s.TaskID == tk.ID {
			need++
		}
	}
	if need != 1 {
		t.Errorf("got %d NEED_APPROVAL signals, want 1", need)
	}
	// Pausing the same call again (a worker that resumed it and found it
	// pending) asks nothing more.
	var again int64
	if _, err := w.pool.Exec(w.ctx, `UPDATE tasks SET state = 'running', worker_id = 'w1', lease_until = now() + interval '1 minute' WHERE id = $1`, tk.ID); err != nil {
		t.Fatal(err)
	}
	again, err := w.store.PauseForApproval(w.ctx, tk.ID, tk.Attempt, 0, master.ApprovalAsk{Timeout: time.Hour, Text: "again"})
	if err != nil || again != id {
		t.Errorf("PauseForApproval again = %d, %v, want the same request %d", again, err, id)
	}

	a, err := w.store.DecideApproval(w.ctx, id, true, "u1")
	if err != nil {
		t.Fatalf("DecideApproval: %v", err)
	}
	if a.State != master.ApprovalApproved || a.DecidedBy != "u1" || a.DecidedAt.IsZero() || a.Role != "engineer" || a.Tool != "fs__write" {
		t.Errorf("decided = %+v, want approved by u1 now", a)
	}
	resumed := w.task(tk.ID)
	if resumed.State != master.TaskQueued {
		t.Errorf("after approval the task is %s, want queued", resumed.State)
	}
	var maxAttempts int
	if err := w.pool.QueryRow(w.ctx, `SELECT max_attempts FROM tasks WHERE id = $1`, tk.ID).Scan(&maxAttempts); err != nil || maxAttempts != tk.Attempt+3 {
		t.Errorf("max_attempts = %d (%v), want %d: waiting is not a failure", maxAttempts, err, tk.Attempt+3)
	}
	if a, err := w.store.DecideApproval(w.ctx, id, false, "u2"); err != nil || a.State != master.ApprovalApproved || a.DecidedBy != "u1" {
		t.Errorf("a second decision = %+v, %v, want the first one unchanged", a, err)
	}
	if calls := w.calls(tk.ID); len(calls) != 1 || calls[0].Approval != master.ApprovalApproved || calls[0].State != master.CallPlanned {
		t.Errorf("ToolCalls = %+v, want the planned call, approved", calls)
	}
	again2 := w.claim("w2", 1)
	if len(again2) != 1 || again2[0].ID != tk.ID || again2[0].Attempt != tk.Attempt+1 {
		t.Errorf("claimed %+v, want the resumed task at attempt %d", again2, tk.Attempt+1)
	}
}

// A request nobody decides expires at the sweep, counting as denied; a
// request whose task is cancelled is cancelled; both leave the message
// to settle, and the settled message is not listed again.
func TestApprovalExpiresAndIsCancelled(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	w.enqueue(session, task("engineer", "one"), task("engineer", "two"))
	tasks := w.claim("w1", 2)
	expiring := w.pauseForApproval(tasks[0], time.Millisecond)
	cancelled := w.pauseForApproval(tasks[1], time.Hour)
	if _, err := w.pool.Exec(w.ctx, `UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = $1`, expiring); err != nil {
		t.Fatal(err)
	}
	requeued, _, err := w.store.SweepExpired(w.ctx)
	if err != nil || requeued != 1 {
		t.Fatalf("SweepExpired = %d, %v, want the expired request's task requeued", requeued, err)
	}
	if got := w.task(tasks[0].ID).State; got != master.TaskQueued {
		t.Errorf("expired request's task is %s, want queued", got)
	}
	if calls := w.calls(tasks[0].ID); calls[0].Approval != master.ApprovalExpired {
		t.Errorf("expired call = %+v, want approval expired", calls[0])
	}
	if n, err := w.store.CancelSessionTasks(w.ctx, session, "dissolved"); err != nil || n != 2 {
		t.Fatalf("CancelSessionTasks = %d, %v, want both tasks (one queued, one paused)", n, err)
	}
	a, _, err := w.store.Approval(w.ctx, cancelled)
	if err != nil || a.State != master.ApprovalCancelled || a.DecidedBy != "" {
		t.Errorf("approval of the cancelled task = %+v, %v, want cancelled", a, err)
	}
	// Nothing is posted yet, so nothing is to settle.
	before := time.Now().Add(time.Minute)
	if list, err := w.store.UnsettledApprovals(w.ctx, master.Scope{}, before, 10); err != nil || len(list) != 0 {
		t.Errorf("UnsettledApprovals before posting = %v, %v, want none", list, err)
	}
	if _, err := w.pool.Exec(w.ctx, `UPDATE outbox SET state = 'sent', sent_at = now(), discord_message_id = 'm' || id WHERE kind = 'approval'`); err != nil {
		t.Fatal(err)
	}
	list, err := w.store.UnsettledApprovals(w.ctx, master.Scope{}, before, 10)
	if err != nil || len(list) != 2 || list[0].ID != expiring || list[0].State != master.ApprovalExpired || list[0].MessageID == "" ||
		list[1].State != master.ApprovalCancelled || list[0].ChannelID == "" {
		t.Fatalf("UnsettledApprovals = %+v, %v, want the expired and the cancelled requests with their messages", list, err)
	}
	if err := w.store.SettleApproval(w.ctx, expiring); err != nil {
		t.Fatal(err)
	}
	if list, _ := w.store.UnsettledApprovals(w.ctx, master.Scope{}, before, 10); len(list) != 1 || list[0].ID != cancelled {
		t.Errorf("after settling one: %+v, want only the other", list)
	}
}

// A role's tools travel from the channel's roles to the session's roster
// and to the task's input.
func TestRoleToolsAreStored(t *testing.T) {
	t.Parallel()
	w := setup(t)
	scope := master.RoleScope{GuildID: "g1", ChannelID: "c1"}
	role := master.Role{Name: "researcher", Description: "d", Prompt: "p", Tools: []string{"fetch_url", "fs.*"}}
	if _, err := w.store.SetRole(w.ctx, scope, role, "u1", 0); err != nil {
		t.Fatal(err)
	}
	got, err := w.store.ConfiguredRoles(w.ctx, "g1", "c1")
	if err != nil || len(got) != 1 || strings.Join(got[0].Tools, ",") != "fetch_url,fs.*" {
		t.Fatalf("ConfiguredRoles = %+v, %v, want the role with its tools", got, err)
	}
	s, _, err := master.NewService(master.ServiceConfig{}, w.store, func(context.Context, string, string) ([]master.Role, error) {
		return []master.Role{role, {Name: "writer", Description: "w", Prompt: "p"}}, nil
	}).StartSession(w.ctx, master.NewSession{GuildID: "g1", ChannelID: "c1", ThreadID: "t-tools", OwnerID: "u1", Goal: "g"})
	if err != nil {
		t.Fatal(err)
	}
	roster, err := w.store.Roster(w.ctx, s.ID)
	if err != nil || len(roster) != 2 || strings.Join(roster[0].Tools, ",") != "fetch_url,fs.*" || roster[1].Tools != nil {
		t.Fatalf("Roster = %+v, %v, want the researcher's tools and none for the writer", roster, err)
	}
}

// The status message and /team see the call a running task is making,
// and the one a paused task waits to make.
func TestActiveCalls(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	turn, _ := w.enqueue(session, task("researcher", "read"), task("engineer", "write"))
	if _, err := w.pool.Exec(w.ctx, `UPDATE turns SET round = 1 WHERE id = $1`, turn); err != nil {
		t.Fatal(err)
	}
	tasks := w.claim("w1", 2)
	reading := w.plan(tasks[0], 0, planned("a", "fetch_url", `{"url":"https://example.com"}`))
	if err := w.store.StartToolCall(w.ctx, tasks[0].ID, tasks[0].Attempt, reading[0].Seq); err != nil {
		t.Fatal(err)
	}
	w.pauseForApproval(tasks[1], time.Hour)
	turns, err := w.store.ActiveTurns(w.ctx, master.Scope{})
	if err != nil || len(turns) != 1 {
		t.Fatalf("ActiveTurns = %+v, %v", turns, err)
	}
	calls := turns[0].Calls
	if calls[tasks[0].ID].Tool != "fetch_url" || !strings.Contains(calls[tasks[0].ID].Args, "example.com") || calls[tasks[1].ID].Tool != "fs__write" {
		t.Errorf("Calls = %+v, want the started call and the one waiting for approval", calls)
	}
	v, err := w.store.TeamView(w.ctx, session, 10)
	if err != nil || v.Calls[tasks[0].ID].Tool != "fetch_url" {
		t.Errorf("TeamView calls = %+v, %v", v.Calls, err)
	}
	if err := w.store.RecordToolCall(w.ctx, tasks[0].ID, tasks[0].Attempt, reading[0].Seq, master.ToolResult{Text: "page"}); err != nil {
		t.Fatal(err)
	}
	if turns, _ := w.store.ActiveTurns(w.ctx, master.Scope{}); len(turns) != 1 || turns[0].Calls[tasks[0].ID].Tool != "" {
		t.Errorf("after the call: %+v, want no call shown for the researcher", turns[0].Calls)
	}
}

// A click that lands after the request expired, before any sweeper saw
// it, approves nothing: the request is recorded expired (counting as
// denied) and its task queued again to read so, in whichever process the
// click came.
func TestLateClickApprovesNothing(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	w.enqueue(session, task("engineer", "write the file"))
	tk := w.claim("w1", 1)[0]
	id := w.pauseForApproval(tk, time.Hour)
	w.exec(`UPDATE approvals SET expires_at = now() - interval '1 second' WHERE id = $1`, id)
	a, err := w.store.DecideApproval(w.ctx, id, true, "u1")
	if err != nil || a.State != master.ApprovalExpired || a.DecidedBy != "" {
		t.Fatalf("a late approval = %+v, %v; want expired, decided by nobody", a, err)
	}
	if got := w.task(tk.ID).State; got != master.TaskQueued {
		t.Errorf("the task is %s, want queued again to read the expiry", got)
	}
	if calls := w.calls(tk.ID); len(calls) != 1 || calls[0].Approval != master.ApprovalExpired {
		t.Errorf("ToolCalls = %+v, want the call expired", calls)
	}
}

// A request keeps the call's arguments in full and its approvers; when
// the arguments do not fit in the message, they are attached to it as
// arguments.json.
func TestApprovalKeepsTheArgumentsAndAttachesLongOnes(t *testing.T) {
	t.Parallel()
	w := setup(t)
	session := w.session()
	w.enqueue(session, task("engineer", "write the file"))
	tk := w.claim("w1", 1)[0]
	long := `{"path":"/srv/notes/pricing.md","padding":"` + strings.Repeat("x ", 1500) + `","mode":"0600"}`
	recs := w.plan(tk, 0, planned("c1", "fs__write", long))
	id, err := w.store.PauseForApproval(w.ctx, tk.ID, tk.Attempt, recs[0].Seq, ask(tk, recs[0], time.Hour, []string{"333"}))
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := w.store.Approval(w.ctx, id)
	if err != nil || a.Args != long || len(a.Approvers) != 1 || a.Approvers[0] != "333" {
		t.Errorf("request = %+v, %v; want the arguments in full and the approvers", a, err)
	}
	var content, name string
	var data []byte
	if err := w.pool.QueryRow(w.ctx, `SELECT o.content, o.file_name, o.file_data FROM outbox o JOIN approvals a ON a.outbox_id = o.id
		WHERE a.id = $1`, id).Scan(&content, &name, &data); err != nil {
		t.Fatal(err)
	}
	if name != "arguments.json" || !strings.Contains(string(data), `"mode": "0600"`) || !strings.Contains(content, "<@&333>") {
		t.Errorf("message %q with file %s %q: want the arguments attached and the approvers named", content, name, data)
	}
	msgs, err := w.store.ClaimOutbox(w.ctx, master.Scope{}, "p", 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Kind == master.OutApproval && (m.File.Name != "arguments.json" || len(m.File.Data) == 0) {
			t.Errorf("claimed the request without its file: %+v", m.File)
		}
	}
}
