package discordtest_test

import (
	"testing"

	"github.com/callonbot/callon/bot/discordtest"
)

// During an outage connections are refused; after it the bot resumes
// and gets what was dispatched meanwhile.
func TestGatewayOutage(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	in := watchMessages(s)

	dc.StopGateway()
	missed := dc.UserMessage(dc.ChannelID("general"), dc.UserID(), "during the outage")
	dc.WaitFor(t, func() bool { return dc.GatewayStats().Refused >= 1 }, "a refused reconnection")
	if dc.Connected() {
		t.Fatal("connected during the outage")
	}
	dc.StartGateway()
	dc.WaitConnected(t)
	dc.WaitFor(t, func() bool { return len(in.find(missed.ID)) == 1 }, "the missed message after the resume")
	if st := dc.GatewayStats(); st.Resumes != 1 || st.Identifies != 1 {
		t.Errorf("got stats %+v, want one identify and one resume", st)
	}
}
