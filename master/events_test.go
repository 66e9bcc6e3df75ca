package master

import (
	"encoding/json"
	"testing"
)

func TestDescribeSignal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		kind    SignalKind
		role    string
		payload string
		want    string
	}{
		{SignalAck, "planner", `{"worker":"w","attempt":2}`, "**planner** started (attempt 2)"},
		{SignalProgress, "planner", `{"percent":40,"note":"drafting\nsteps"}`, "**planner** at 40%: drafting steps"},
		{SignalTaskComplete, "planner", `{"state":"done"}`, "**planner** finished"},
		{SignalTaskComplete, "planner", `{"state":"failed","error":"model error: boom"}`, "**planner** failed: model error: boom"},
		{SignalTaskComplete, "planner", `{"state":"timeout"}`, "**planner** timed out"},
		{SignalBlocked, "writer", `{"reason":"no access"}`, "**writer** is blocked: no access"},
		{SignalNeedInfo, "writer", `{"question":"which city?"}`, "**writer** asks: which city?"},
		{SignalHandoff, "writer", `{"from":"writer","to":"reviewer"}`, "**writer** handed over to **reviewer**"},
		{SignalReport, "", `{"to":"123"}`, "a report went to <#123>"},
		{SignalWebhook, "", `{"event":"session.started","delivered":true}`, "webhook session.started delivered"},
		{SignalWebhook, "", `{"event":"session.started","status":503}`, "webhook session.started failed (HTTP 503), retrying"},
		{SignalAck, "", `not json`, "a member started"},
		{SignalTool, "researcher", `{"tool":"fetch_url","args":"{\"url\":\"https://example.com\"}","ok":true,"duration_ms":1500,"size":2048}`,
			"**researcher** called `fetch_url` `{\"url\":\"https://example.com\"}` (2 s, 2 KiB)"},
		{SignalTool, "researcher", `{"tool":"files__write","args":"{}","ok":false,"error":"denied by a person"}`,
			"**researcher** called `files.write`: failed: denied by a person"},
		{SignalNeedApproval, "engineer", `{"tool":"git__push","args":"{\"branch\":\"main\"}"}`,
			"**engineer** waits for approval to call `git.push` `{\"branch\":\"main\"}`"},
	} {
		if got := DescribeSignal(Signal{Kind: tc.kind, Role: tc.role, Payload: json.RawMessage(tc.payload)}); got != tc.want {
			t.Errorf("%s %s: got %q, want %q", tc.kind, tc.payload, got, tc.want)
		}
	}
}
