package store_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// sessionIn starts a session in a guild's channel.
func (w *world) sessionIn(guild, channel string) master.Session {
	w.t.Helper()
	s, err := w.store.StartSession(w.ctx, master.Session{GuildID: guild, ChannelID: channel,
		ThreadID: fmt.Sprint("th-", fixtureSeq.Add(1)), OwnerID: "u1", Goal: "ship it"}, master.DefaultRoles(), "kickoff!", "", master.SessionCaps{})
	if err != nil {
		w.t.Fatalf("StartSession: %v", err)
	}
	return s
}

// ended runs one task of role in session to the outcome, in order; its
// model calls' usage (out.Usage) is charged to it as calls are, when
// they return.
func (w *world) ended(s master.Session, role string, out master.Outcome) int64 {
	w.t.Helper()
	_, ids := w.enqueue(s.ID, task(role, "do it"))
	got := w.claim("w1", 1)
	if len(got) != 1 || got[0].ID != ids[0] {
		w.t.Fatalf("claimed %+v, want task %d", got, ids[0])
	}
	if out.Usage.Total() > 0 {
		held, err := w.store.HoldSpend(w.ctx, master.Hold{SessionID: s.ID, TaskID: ids[0], Model: "m", PromptTokens: out.Usage.Total(), Owner: "w1"})
		if err != nil {
			w.t.Fatal(err)
		}
		if err := w.store.SettleSpend(w.ctx, held.ID, out.Usage); err != nil {
			w.t.Fatal(err)
		}
	}
	if _, err := w.store.CompleteTask(w.ctx, got[0].ID, got[0].Attempt, out); err != nil {
		w.t.Fatal(err)
	}
	return ids[0]
}

// A role's record is read from its task rows: per channel, cancelled
// tasks aside, the last ten for the master (with the roster, in
// TurnReads), and the window's aggregate for the dashboard and /team.
func TestRoleRecordsFromTaskRows(t *testing.T) {
	t.Parallel()
	w := setup(t)
	a, b := w.sessionIn("g1", "c1"), w.sessionIn("g1", "c1")
	other := w.sessionIn("g2", "c2")
	done := master.Outcome{State: master.TaskDone, Result: "ok", Usage: master.Usage{PromptTokens: 100, CompletionTokens: 20}}
	for range 3 {
		w.ended(a, "writer", done)
	}
	w.ended(b, "writer", master.Outcome{State: master.TaskTimeout, Error: "timed out after 5m0s"})
	w.ended(a, "writer", master.Outcome{State: master.TaskFailed, Error: "model error: 500"})
	w.ended(b, "writer", master.Outcome{State: master.TaskBlocked, Result: "no <b>access</b>"})
	w.ended(a, "researcher", master.Outcome{State: master.TaskNeedInfo, Result: "so far", Question: "which?"})
	for range 12 { // another channel's record is its own
		w.ended(other, "writer", master.Outcome{State: master.TaskFailed, Error: "elsewhere"})
	}
	// A cancelled task is not the role's doing.
	_, ids := w.enqueue(a.ID, task("writer", "never mind"))
	if _, err := w.store.CancelSessionTasks(w.ctx, a.ID, "dissolved"); err != nil {
		t.Fatal(err)
	}
	if got := w.task(ids[0]).State; got != master.TaskCancelled {
		t.Fatalf("task is %s, want cancelled", got)
	}

	turn, _ := w.record(a, "m-records")
	reads, err := w.store.TurnReads(w.ctx, a.ID, turn.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]master.RoleTrack{
		"writer":     {Last: 6, Failed: 1, Timeout: 1, Blocked: 1},
		"researcher": {Last: 1, NeedInfo: 1},
	}
	if len(reads.Tracks) != len(want) || reads.Tracks["writer"] != want["writer"] || reads.Tracks["researcher"] != want["researcher"] {
		t.Errorf("tracks = %+v, want %+v", reads.Tracks, want)
	}
	if len(reads.Roster) != len(master.DefaultRoles()) {
		t.Errorf("roster has %d roles, want %d", len(reads.Roster), len(master.DefaultRoles()))
	}
	// The other channel's twelve failures count ten there: the last ten.
	turn, _ = w.record(other, "m-records-2")
	if reads, err = w.store.TurnReads(w.ctx, other.ID, turn.ID, 10); err != nil {
		t.Fatal(err)
	}
	if got := reads.Tracks["writer"]; got != (master.RoleTrack{Last: master.TrackLen, Failed: master.TrackLen}) {
		t.Errorf("other channel's writer = %+v, want its last %d failed", got, master.TrackLen)
	}

	// Open now: a queued writer task in c1.
	w.enqueue(b.ID, task("writer", "queued"))
	recs, err := w.store.Reliability(w.ctx, master.ReliabilityQuery{Guilds: []string{"g1"}, Since: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Role != "researcher" || recs[1].Role != "writer" {
		t.Fatalf("records = %+v, want researcher and writer of g1/c1 only", recs)
	}
	wr := recs[1]
	if wr.GuildID != "g1" || wr.ChannelID != "c1" || wr.Tasks != 6 || wr.Done != 3 || wr.Failed != 1 || wr.Timeout != 1 || wr.Blocked != 1 || wr.Open != 1 {
		t.Errorf("writer = %+v, want 6 tasks in g1/c1: 3 done, 1 failed, 1 timeout, 1 blocked, 1 open", wr)
	}
	if wr.Share(master.TaskDone) != 0.5 {
		t.Errorf("done share = %v, want 0.5", wr.Share(master.TaskDone))
	}
	if wr.TokensPerTask != 60 { // 3 × 120 over 6 tasks
		t.Errorf("tokens per task = %d, want 60", wr.TokensPerTask)
	}
	if wr.LastFailure != "no <b>access</b>" || wr.LastFailureAt.IsZero() {
		t.Errorf("last failure = %q at %v, want the blocked task's reason", wr.LastFailure, wr.LastFailureAt)
	}
	wantTrend := []master.TaskState{master.TaskDone, master.TaskDone, master.TaskDone, master.TaskTimeout, master.TaskFailed, master.TaskBlocked}
	if !slices.Equal(wr.Trend, wantTrend) {
		t.Errorf("trend = %v, want %v (oldest first)", wr.Trend, wantTrend)
	}
	if wr.Median < 0 || wr.P90 < wr.Median {
		t.Errorf("median %v, p90 %v: want 0 ≤ median ≤ p90", wr.Median, wr.P90)
	}

	// /team shows the roster's records in roster order.
	v, err := w.store.TeamView(w.ctx, a.ID, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Reliability) != 2 || v.Reliability[0].Role != "researcher" || v.Reliability[1].Role != "writer" || v.Reliability[1].Tasks != 6 {
		t.Errorf("team view's records = %+v, want researcher's then writer's 6 tasks", v.Reliability)
	}

	// No guild: nothing; every guild: both; one channel and role.
	if recs, err = w.store.Reliability(w.ctx, master.ReliabilityQuery{Guilds: []string{}, Since: time.Now().Add(-time.Hour)}); err != nil || len(recs) != 0 {
		t.Errorf("records of no guild = %+v, %v; want none", recs, err)
	}
	if recs, err = w.store.Reliability(w.ctx, master.ReliabilityQuery{Since: time.Now().Add(-time.Hour)}); err != nil || len(recs) != 3 {
		t.Errorf("records of every guild = %+v, %v; want 3", recs, err)
	}
	recs, err = w.store.Reliability(w.ctx, master.ReliabilityQuery{Channel: "c2", Roles: []string{"writer"}, Since: time.Now().Add(-time.Hour)})
	if err != nil || len(recs) != 1 || recs[0].Tasks != 12 || len(recs[0].Trend) != master.TrendLen-8 {
		t.Errorf("c2's writer = %+v, %v; want 12 tasks, a trend of 12", recs, err)
	}
}
