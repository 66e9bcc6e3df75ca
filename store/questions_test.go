package store_test

import (
	"errors"
	"testing"

	"github.com/callonbot/callon/master"
)

// delegateRound starts the session's turn and delegates tasks as round 1.
func (w *world) delegateRound(s master.Session, tasks ...master.NewTask) (master.Guard, []int64) {
	w.t.Helper()
	turn, _ := w.record(s, "m-"+s.ThreadID)
	w.lease(s, "p1")
	if _, err := w.store.OpenTurn(w.ctx, s.ID); err != nil {
		w.t.Fatal(err)
	}
	g := master.Guard{SessionID: s.ID, TurnID: turn.ID, Round: 0, Owner: "p1"}
	ids, err := w.store.Delegate(w.ctx, g, tasks)
	if err != nil {
		w.t.Fatal(err)
	}
	g.Round = 1
	return g, ids
}

func TestNeedInfoResumesWithItsDependents(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	g, ids := w.delegateRound(s, task("researcher", "a"), task("writer", "b", 0))
	a := w.claim("w1", 5)[0]
	if _, err := w.store.CompleteTask(w.ctx, a.ID, a.Attempt, master.Outcome{State: master.TaskNeedInfo, Result: "so far", Question: "which?"}); err != nil {
		t.Fatal(err)
	}
	if got := w.task(ids[1]); got.State != master.TaskCancelled {
		t.Fatalf("dependent is %s, want cancelled while its dependency waits", got.State)
	}
	if got := w.task(ids[0]); got.Question() != "which?" || got.Result != "so far" {
		t.Fatalf("task = %+v, want the question and the work so far", got)
	}
	if err := w.store.ResumeTask(w.ctx, g, ids[0], "this one"); err != nil {
		t.Fatal(err)
	}
	resumed, dep := w.task(ids[0]), w.task(ids[1])
	if resumed.State != master.TaskQueued || len(resumed.QA) != 1 || resumed.QA[0].Answer != "this one" {
		t.Errorf("resumed task = %+v, want queued with the answer", resumed)
	}
	if dep.State != master.TaskQueued {
		t.Errorf("dependent is %s, want queued again", dep.State)
	}
	if err := w.store.ResumeTask(w.ctx, g, ids[0], "again"); !errors.Is(err, master.ErrStale) {
		t.Errorf("second ResumeTask: %v, want ErrStale", err)
	}
	again := w.claim("w2", 5)
	if len(again) != 1 || again[0].ID != ids[0] || again[0].Attempt != 2 {
		t.Fatalf("claimed %+v, want the resumed task at attempt 2 (its dependent still waits)", again)
	}
}

func TestUserAnswerGoesBackToWaitingWorkers(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	g, ids := w.delegateRound(s, task("planner", "plan"))
	p := w.claim("w1", 1)[0]
	w.store.CompleteTask(w.ctx, p.ID, p.Attempt, master.Outcome{State: master.TaskNeedInfo, Question: "how many?"})
	if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutQuestion, State: master.TurnWaiting, Parts: []string{"How many?"}}); err != nil {
		t.Fatal(err)
	}
	answer, created := w.record(s, "answer-1")
	if !created || answer.State != master.TurnDone {
		t.Errorf("answer turn: created %v state %s, want a turn that is done at once", created, answer.State)
	}
	open, err := w.store.OpenTurn(w.ctx, s.ID)
	if err != nil || open.ID != g.TurnID || open.State != master.TurnRunning {
		t.Fatalf("OpenTurn = %+v, %v; want the waiting turn running again", open, err)
	}
	if got := w.task(ids[0]); got.State != master.TaskQueued || got.QA[0].Answer != "hi answer-1" {
		t.Errorf("task = %+v, want queued with the user's message as the answer", got)
	}
}

func TestHandoffQueuesATaskInTheSameRound(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	g, ids := w.delegateRound(s, task("researcher", "find"))
	r := w.claim("w1", 1)[0]
	_, err := w.store.CompleteTask(w.ctx, r.ID, r.Attempt, master.Outcome{State: master.TaskDone, Result: "facts",
		Handoff: &master.Handoff{Role: "writer", Instruction: "write it"}})
	if err != nil {
		t.Fatal(err)
	}
	tasks, _ := w.store.TurnTasks(w.ctx, g.TurnID)
	if len(tasks) != 2 || tasks[1].Role != "writer" || tasks[1].Round != 1 || len(tasks[1].DependsOn) != 1 || tasks[1].DependsOn[0] != ids[0] {
		t.Fatalf("tasks = %+v, want a writer task in round 1 depending on the researcher's", tasks)
	}
	var kinds []master.SignalKind
	for _, sg := range w.signals(s.ID) {
		kinds = append(kinds, sg.Kind)
	}
	if len(kinds) != 3 || kinds[1] != master.SignalTaskComplete || kinds[2] != master.SignalHandoff {
		t.Errorf("signals = %v, want ACK, TASK_COMPLETE, HANDOFF", kinds)
	}
	_, err = w.store.CompleteTask(w.ctx, tasks[1].ID, 0, master.Outcome{State: master.TaskDone,
		Handoff: &master.Handoff{Role: "chef", Instruction: "x"}})
	if err == nil {
		t.Error("a handoff from a task that is not running was accepted")
	}
}
