package workers

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// fakeTools is a Toolbox: the role may call tools named in its list
// (exactly, or "<server>.*"), calls of names in approve need approval,
// and a call answers "<name> said <args>" and is counted.
type fakeTools struct {
	approve []string

	mu    sync.Mutex
	calls []string // name args, in order
}

func (f *fakeTools) Offer(_ context.Context, _ string, allowed []string) ([]master.Tool, string) {
	var out []master.Tool
	for _, a := range allowed {
		out = append(out, master.Tool{Name: strings.Replace(a, ".", "__", 1), Parameters: json.RawMessage(`{"type":"object"}`)})
	}
	return out, "Some of your tools are unavailable right now: none, really."
}

func (f *fakeTools) Allows(_ string, allowed []string, name string) bool {
	for _, a := range allowed {
		if strings.Replace(a, ".", "__", 1) == name {
			return true
		}
	}
	return false
}

func (f *fakeTools) NeedsApproval(_ []string, name, _ string) bool {
	for _, a := range f.approve {
		if a == name {
			return true
		}
	}
	return false
}

func (f *fakeTools) Approvers(string) []string { return nil }

func (f *fakeTools) Call(_ context.Context, _, name, args string) master.ToolResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name+" "+args)
	return master.ToolResult{Text: name + " said " + args, Duration: time.Millisecond, Size: 10}
}

func (f *fakeTools) made() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// callLog is an in-memory record of a task's calls, behind the fake
// store's tool-call methods.
type callLog struct {
	mu       sync.Mutex
	recs     []master.CallRecord
	results  []master.ToolResult // recorded, in order
	paused   []int               // seqs a pause was asked for
	usage    master.Usage        // charged as the model calls returned
	timeout  time.Duration
	startErr error
}

func (l *callLog) install(s *fakeStore) {
	s.ToolCallsFunc = func(context.Context, int64) ([]master.CallRecord, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		return append([]master.CallRecord(nil), l.recs...), nil
	}
	s.PlanToolCallsFunc = func(_ context.Context, taskID int64, _, step int, calls []master.PlannedCall) ([]master.CallRecord, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		var out []master.CallRecord
		for _, c := range calls {
			r := master.CallRecord{TaskID: taskID, Seq: len(l.recs), Step: step, CallID: c.CallID, Name: c.Name, Args: c.Args, State: master.CallPlanned}
			l.recs = append(l.recs, r)
			out = append(out, r)
		}
		return out, nil
	}
	s.StartToolCallFunc = func(_ context.Context, _ int64, _, seq int) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.startErr != nil {
			return l.startErr
		}
		l.recs[seq].State = master.CallStarted
		return nil
	}
	s.RecordToolCallFunc = func(_ context.Context, _ int64, _, seq int, res master.ToolResult) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.recs[seq].State, l.recs[seq].Result, l.recs[seq].IsError = master.CallDone, res.Text, res.IsError
		l.results = append(l.results, res)
		return nil
	}
	s.PauseForApprovalFunc = func(_ context.Context, _ int64, _, seq int, timeout time.Duration) (int64, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.paused = append(l.paused, seq)
		l.timeout = timeout
		return 7, nil
	}
	s.SettleSpendFunc = func(_ context.Context, _ int64, u master.Usage) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.usage = l.usage.Add(u)
		return nil
	}
}

// toolTask runs researchTask for a role with tools, against a call log
// holding recorded, and returns what it came to.
func toolTask(t *testing.T, tb *fakeTools, recorded []master.CallRecord, answers ...answer) (*taskWorld, *callLog, *scripted) {
	t.Helper()
	w := newTaskWorld()
	w.store.TaskInputFunc = func(context.Context, master.Task) (TaskInput, error) {
		return TaskInput{Goal: "g", Role: master.Role{Name: "researcher", Tools: []string{"fetch_url", "fs.write"}}}, nil
	}
	log := &callLog{recs: recorded}
	log.install(w.store)
	s := &scripted{answers: answers}
	p := New(Config{ID: "w1", SweepEvery: -1, MaxSteps: 4, Tools: tb, ApprovalTimeout: time.Minute}, w.store, s.llm(t), discard())
	runTaskNow(context.Background(), p, researchTask)
	return w, log, s
}

// toolMessages are the results a request carried, by call id.
func toolMessages(req master.ChatRequest) map[string]string {
	out := map[string]string{}
	for _, m := range req.Messages {
		if m.Role == master.RoleTool {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

func TestToolCallIsMadeRecordedAndRead(t *testing.T) {
	t.Parallel()
	tb := &fakeTools{}
	w, log, s := toolTask(t, tb, nil,
		answer{resp: master.ChatResponse{ToolCalls: []master.ToolCall{
			{ID: "a", Name: "fetch_url", Arguments: `{"url":"u"}`},
			{ID: "b", Name: "web_search", Arguments: `{}`},
			{ID: "p", Name: ToolProgress, Arguments: `{"percent":50,"note":"reading"}`},
		}}},
		call("r", ToolReport, `{"status":"done","result":"found it"}`, master.Usage{}))
	if got := w.only(t); got.State != master.TaskDone || got.Result != "found it" {
		t.Fatalf("outcome %+v, want done", got)
	}
	if got := tb.made(); len(got) != 1 || got[0] != `fetch_url {"url":"u"}` {
		t.Errorf("calls made %q, want fetch_url only (web_search is not the role's)", got)
	}
	reqs := s.requests()
	first := reqs[0]
	if names := toolNames(first.Tools); names != "report,progress,fetch_url,fs__write" {
		t.Errorf("tools offered %s, want the worker's and the role's own", names)
	}
	if !strings.Contains(first.Messages[0].Content, "tools of your own") || !strings.Contains(first.Messages[0].Content, "unavailable right now") {
		t.Errorf("system prompt lacks the tools instructions or the notice:\n%s", first.Messages[0].Content)
	}
	results := toolMessages(reqs[1])
	if results["a"] != `fetch_url said {"url":"u"}` || !strings.Contains(results["b"], `no tool "web_search"`) || results["p"] != "noted" {
		t.Errorf("results read %v, want the call's output, an error for the unknown tool, and noted", results)
	}
	if len(log.results) != 1 || log.recs[0].State != master.CallDone {
		t.Errorf("recorded %+v, want the call done", log.recs)
	}
}

func toolNames(tools []master.Tool) string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return strings.Join(names, ",")
}

// A task run again replays what its earlier attempt recorded: a done
// call's result, never made again; a started one is interrupted, not
// made; a planned one of the same step is made; the model is asked from
// the step after the recorded ones.
func TestToolCallsAreReplayedNotRepeated(t *testing.T) {
	t.Parallel()
	tb := &fakeTools{}
	recorded := []master.CallRecord{
		{Seq: 0, Step: 0, CallID: "a", Name: "fetch_url", Args: `{"url":"1"}`, State: master.CallDone, Result: "page one"},
		{Seq: 1, Step: 2, CallID: "b", Name: "fs__write", Args: `{"n":1}`, State: master.CallStarted},
		{Seq: 2, Step: 2, CallID: "c", Name: "fetch_url", Args: `{"url":"2"}`, State: master.CallPlanned},
	}
	w, log, s := toolTask(t, tb, recorded, call("r", ToolReport, `{"status":"done","result":"ok"}`, master.Usage{}))
	if got := w.only(t); got.State != master.TaskDone {
		t.Fatalf("outcome %+v, want done", got)
	}
	if got := tb.made(); len(got) != 1 || got[0] != `fetch_url {"url":"2"}` {
		t.Errorf("calls made %q, want only the planned one", got)
	}
	req := s.requests()[0]
	results := toolMessages(req)
	if results["a"] != "page one" || !strings.Contains(results["b"], "interrupted") || results["c"] != `fetch_url said {"url":"2"}` {
		t.Errorf("replayed results %v", results)
	}
	var assistants int
	for _, m := range req.Messages {
		if m.Role == master.RoleAssistant {
			assistants++
		}
	}
	if assistants != 2 {
		t.Errorf("got %d assistant messages, want one per recorded step", assistants)
	}
	if len(log.results) != 2 || !log.results[0].IsError {
		t.Errorf("recorded %+v, want the interrupted call (an error) and the planned one", log.results)
	}
	// Steps 0 and 2 were used: the last step (3) is this one, and the
	// model is told so.
	if last := req.Messages[len(req.Messages)-1]; last.Role != master.RoleUser || !strings.Contains(last.Content, "last step") {
		t.Errorf("last message %+v, want the last-step notice", last)
	}
}

// A call that needs approval pauses the task: nothing is made or
// completed, and the usage so far was charged as the model answered; a decision recorded
// for it is honoured when the task runs again.
func TestApprovalPausesThenIsHonoured(t *testing.T) {
	t.Parallel()
	tb := &fakeTools{approve: []string{"fs__write"}}
	w, log, _ := toolTask(t, tb, nil, answer{resp: master.ChatResponse{Usage: master.Usage{PromptTokens: 3, CompletionTokens: 2},
		ToolCalls: []master.ToolCall{{ID: "w", Name: "fs__write", Arguments: `{"path":"/x"}`}, {ID: "f", Name: "fetch_url", Arguments: `{}`}}}})
	w.nothingWritten(t)
	if len(log.paused) != 1 || log.paused[0] != 0 || log.usage.Total() != 5 || log.timeout != time.Minute {
		t.Errorf("paused %v with usage %+v timeout %s, want call 0, the usage so far and the configured timeout", log.paused, log.usage, log.timeout)
	}
	if made := tb.made(); len(made) != 0 {
		t.Errorf("calls made %q, want none before the decision", made)
	}

	for _, tc := range []struct {
		decision master.ApprovalState
		want     string
		made     int
	}{
		{master.ApprovalApproved, `fs__write said {"path":"/x"}`, 2},
		{master.ApprovalDenied, "A person denied this call", 1},
		{master.ApprovalExpired, "Nobody approved this call in time", 1},
	} {
		recs := append([]master.CallRecord(nil), log.recs...)
		recs[0].Approval = tc.decision
		tb := &fakeTools{approve: []string{"fs__write"}}
		w, _, s := toolTask(t, tb, recs, call("r", ToolReport, `{"status":"done","result":"ok"}`, master.Usage{}))
		if got := w.only(t); got.State != master.TaskDone {
			t.Errorf("%s: outcome %+v, want done", tc.decision, got)
		}
		if results := toolMessages(s.requests()[0]); !strings.Contains(results["w"], tc.want) || results["f"] != "fetch_url said {}" {
			t.Errorf("%s: results %v, want %q for the decided call and the other call made", tc.decision, results, tc.want)
		}
		if made := tb.made(); len(made) != tc.made {
			t.Errorf("%s: calls made %q, want %d", tc.decision, made, tc.made)
		}
	}
}

// One answer makes at most maxCallsPerStep calls.
func TestCallsPerStepAreBounded(t *testing.T) {
	t.Parallel()
	var calls []master.ToolCall
	for range maxCallsPerStep + 2 {
		calls = append(calls, master.ToolCall{Name: "fetch_url", Arguments: `{}`})
	}
	tb := &fakeTools{}
	w, _, s := toolTask(t, tb, nil, answer{resp: master.ChatResponse{ToolCalls: calls}},
		call("r", ToolReport, `{"status":"done","result":"ok"}`, master.Usage{}))
	w.only(t)
	if made := len(tb.made()); made != maxCallsPerStep {
		t.Errorf("made %d calls, want %d", made, maxCallsPerStep)
	}
	results := toolMessages(s.requests()[1])
	if len(results) != maxCallsPerStep+2 {
		t.Errorf("got %d results, want one per call (ids given to calls without one)", len(results))
	}
}

// Arguments that a person and the tool could read two ways (a key given
// twice, which JSON parsers resolve to the last), or that are not one
// JSON object, are refused before anyone is asked: no request, no call,
// and the model reads why.
func TestAmbiguousArgumentsAreRefusedBeforeApproval(t *testing.T) {
	t.Parallel()
	tb := &fakeTools{approve: []string{"fs__write"}}
	dup := `{"path":"/srv/notes/pricing.md","text":"` + strings.Repeat(" ", 700) + `","path":"/home/callon/.ssh/authorized_keys"}`
	w, log, s := toolTask(t, tb, nil,
		answer{resp: master.ChatResponse{ToolCalls: []master.ToolCall{
			{ID: "w", Name: "fs__write", Arguments: dup},
			{ID: "f", Name: "fetch_url", Arguments: `["https://example.com"]`},
		}}},
		call("r", ToolReport, `{"status":"done","result":"gave up"}`, master.Usage{}))
	if got := w.only(t); got.State != master.TaskDone {
		t.Fatalf("outcome %+v, want done", got)
	}
	if len(log.paused) != 0 || len(tb.made()) != 0 {
		t.Errorf("paused %v and made %q, want neither", log.paused, tb.made())
	}
	res := toolMessages(s.requests()[1])
	if !strings.Contains(res["w"], `Not made: the arguments give the key "path" twice`) || !strings.Contains(res["f"], "one JSON object") {
		t.Errorf("the model read %q, want each refusal", res)
	}
}
