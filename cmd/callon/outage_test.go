package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

// A reply decided while Discord refuses every post (an outage of the
// endpoint) is posted once Discord is back: every part once, in order,
// the first replying to the message. (How soon is callon bench's outage
// stage.)
func TestReplyAfterAnOutage(t *testing.T) {
	t.Parallel()
	var long strings.Builder
	for i := range 300 {
		fmt.Fprintf(&long, "line %03d of a long answer\n", i)
	}
	w := setup(t, llmtest.Always(reply(long.String())))
	thread := w.team("Wait for Discord")
	w.dc.Down(discordtest.RouteCreateMessage, http.StatusServiceUnavailable)
	before := w.dc.Calls(discordtest.RouteCreateMessage)
	msg := w.say(thread, "a long answer, please")
	w.dc.WaitFor(t, func() bool { return w.dc.Calls(discordtest.RouteCreateMessage) >= before+3 }, "three tries during the outage")
	w.dc.ClearFaults(discordtest.RouteCreateMessage)
	want := strings.TrimSpace(long.String())
	joined := func() string {
		var parts []string
		for _, m := range w.reply(thread, msg) {
			parts = append(parts, m.Content)
		}
		return strings.Join(parts, "\n")
	}
	w.dc.WaitFor(t, func() bool { return len(joined()) >= len(want) }, "the whole reply")
	if got := joined(); got != want {
		t.Errorf("the reply after the outage is not the answer in order, once:\n%s", got)
	}
}
