package master

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// catchUpStore records what a catch-up asks of the store; every message
// it records is refused, as a full queue would.
type catchUpStore struct {
	SessionStore // unused methods panic
	point        CatchUpPoint
	recorded     map[string]Admission
	notices      []string
}

func (f *catchUpStore) CatchUpPoints(context.Context) ([]CatchUpPoint, error) {
	return []CatchUpPoint{f.point}, nil
}

func (f *catchUpStore) DormantPoints(context.Context) ([]CatchUpPoint, error) { return nil, nil }

func (f *catchUpStore) Access(context.Context, string) (Access, error) { return nil, nil }

func (f *catchUpStore) RecordTurn(_ context.Context, t Turn, a Admission) (Turn, bool, error) {
	f.recorded[t.MessageID] = a
	t.State = TurnRefused
	return t, true, nil
}

func (f *catchUpStore) Notice(_ context.Context, _ int64, text string) error {
	f.notices = append(f.notices, text)
	return nil
}

type historyReader []Incoming

func (h historyReader) MessagesAfter(context.Context, string, string, int) ([]Incoming, error) {
	return h, nil
}

func (historyReader) MemberRoles(context.Context, string, string) ([]string, error) { return nil, nil }

func (historyReader) ActiveThreads(context.Context, string) (map[string]string, error) {
	return nil, nil
}

// The catch-up counts as missed only what was posted before the gateway
// session began; what it finds posted since is admitted as on arrival
// (the gateway may deliver it too, and the first to record it wins), and
// what is newer than the clocks' margin is left to the gateway.
func TestCatchUpLeavesLiveMessagesToTheGateway(t *testing.T) {
	t.Parallel()
	ready := time.Now().Truncate(time.Millisecond)
	at := func(d time.Duration) string { return strconv.FormatInt(Snowflake(ready.Add(d)), 10) }
	missed, live, later := at(-time.Minute), at(time.Second), at(catchUpSkew+time.Second)
	st := &catchUpStore{point: CatchUpPoint{SessionID: 1, GuildID: "g", ChannelID: "c", ThreadID: "t",
		Started: ready.Add(-time.Hour)}, recorded: map[string]Admission{}}
	svc := NewService(ServiceConfig{MaxQueued: 5, UserPerMinute: 3}, st, nil)
	history := historyReader{
		{ID: missed, AuthorID: "ann", Content: "while away"},
		{ID: live, AuthorID: "ann", Content: "just now"},
		{ID: later, AuthorID: "ann", Content: "later"},
	}
	if _, err := svc.CatchUp(t.Context(), history, ready, nil); err != nil {
		t.Fatal(err)
	}
	if a, ok := st.recorded[missed]; !ok || a.MaxOpen != 5 || a.PerMinute != 0 || a.QueueFull != "" {
		t.Errorf("missed message recorded %v with %+v, want the catch-up's admission (queue only, no notice of its own)", ok, a)
	}
	if a, ok := st.recorded[live]; !ok || a != svc.admission() {
		t.Errorf("live message recorded %v with %+v, want the admission of a message on arrival", ok, a)
	}
	if _, ok := st.recorded[later]; ok {
		t.Error("a message newer than the margin was recorded: it is the gateway's")
	}
	if len(st.notices) != 1 || !strings.Contains(st.notices[0], "missed 1 message here. I picked up 0; the other 1 will not be answered") {
		t.Errorf("notices = %q, want one counting only the message posted while away", st.notices)
	}
}
