package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/callonbot/callon/master"
)

// recordWith records a message with files (planned by the default
// policy, as if on Discord's CDN) and the role it is addressed to.
func (w *world) recordWith(s master.Session, msgID, addressedTo string, files ...master.IncomingAttachment) master.Turn {
	w.t.Helper()
	for i := range files {
		files[i].URL = master.DefaultCDNURL + "/attachments/1/" + files[i].ID + "/" + files[i].Filename + "?ex=1&is=2&hm=3&"
	}
	turn, created, err := w.store.RecordTurn(w.ctx, master.Turn{SessionID: s.ID, MessageID: msgID, GuildID: s.GuildID,
		ChannelID: s.ThreadID, AuthorID: "u1", Content: "see attached", AddressedTo: addressedTo,
		Attachments: master.AttachmentPolicy{}.Plan(files)}, master.Admission{})
	if err != nil || !created {
		w.t.Fatalf("RecordTurn = %v, %v; want a new turn", created, err)
	}
	return turn
}

func (w *world) attachments(turnID int64) []master.Attachment {
	w.t.Helper()
	atts, err := w.store.TurnAttachments(w.ctx, turnID)
	if err != nil {
		w.t.Fatal(err)
	}
	return atts
}

func (w *world) pending(owner string) []int64 {
	w.t.Helper()
	ids, err := w.store.PendingSessions(w.ctx, master.Scope{}, owner)
	if err != nil {
		w.t.Fatal(err)
	}
	return ids
}

func TestAttachmentsRecordedWithTheTurnAndFetchedOnce(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	turn := w.recordWith(s, "m1", "planner",
		master.IncomingAttachment{ID: "a1", Filename: "notes.md", ContentType: "text/markdown", Size: 7},
		master.IncomingAttachment{ID: "a2", Filename: "deck.pdf", ContentType: "application/pdf", Size: 900})
	atts := w.attachments(turn.ID)
	if len(atts) != 2 || atts[0].State != master.AttachmentPending || atts[1].State != master.AttachmentSkipped || atts[1].Note == "" {
		t.Fatalf("attachments = %+v, want notes.md pending and deck.pdf skipped with a note", atts)
	}
	if _, created, err := w.store.RecordTurn(w.ctx, master.Turn{SessionID: s.ID, MessageID: "m1", Attachments: master.AttachmentPolicy{}.Plan(
		[]master.IncomingAttachment{{ID: "a3", Filename: "x.txt", URL: master.DefaultCDNURL + "/x"}})}, master.Admission{}); err != nil || created {
		t.Fatalf("redelivery: created %v, %v; want the first turn", created, err)
	}
	if got := len(w.attachments(turn.ID)); got != 2 {
		t.Errorf("a redelivery left %d attachments, want 2", got)
	}
	if slices.Contains(w.pending("p1"), s.ID) {
		t.Error("the session is pending for its master while a file of its turn is still to download")
	}

	claimed, err := w.store.ClaimAttachments(w.ctx, master.Scope{}, "p1", 10, time.Minute)
	if err != nil || len(claimed) != 1 || claimed[0].Name != "notes.md" || claimed[0].Attempts != 1 || claimed[0].URL == "" {
		t.Fatalf("ClaimAttachments = %+v, %v; want notes.md at attempt 1 with its URL", claimed, err)
	}
	if again, err := w.store.ClaimAttachments(w.ctx, master.Scope{}, "p2", 10, time.Minute); err != nil || len(again) != 0 {
		t.Fatalf("a second claim got %+v, %v; want nothing while the lease holds", again, err)
	}
	stored := master.AttachmentResult{State: master.AttachmentStored, Data: []byte("# notes"), Size: 7}
	if err := w.store.SaveAttachment(w.ctx, "p2", claimed[0].ID, stored); !errors.Is(err, master.ErrStale) {
		t.Errorf("a save by another owner: %v, want ErrStale", err)
	}
	if err := w.store.SaveAttachment(w.ctx, "p1", claimed[0].ID, stored); err != nil {
		t.Fatal(err)
	}
	got := w.attachments(turn.ID)[0]
	if got.State != master.AttachmentStored || string(got.Data) != "# notes" || got.ContentType != "text/markdown" {
		t.Errorf("stored file = %+v, want its content, its type kept", got)
	}
	if err := w.store.SaveAttachment(w.ctx, "p1", claimed[0].ID, stored); !errors.Is(err, master.ErrStale) {
		t.Errorf("saving a stored file again: %v, want ErrStale", err)
	}
	if !slices.Contains(w.pending("p1"), s.ID) {
		t.Error("the session is not pending for its master once its files are resolved")
	}
	open, err := w.store.OpenTurn(w.ctx, s.ID)
	if err != nil || open.AddressedTo != "planner" {
		t.Errorf("OpenTurn = %+v, %v; want the turn addressed to planner", open, err)
	}
}

func TestAttachmentRetriedLaterOrGivenBack(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	turn := w.recordWith(s, "m1", "", master.IncomingAttachment{ID: "a1", Filename: "a.txt", Size: 3})
	claim := func() []master.Attachment {
		t.Helper()
		atts, err := w.store.ClaimAttachments(w.ctx, master.Scope{}, "p1", 10, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return atts
	}
	a := claim()[0]
	if err := w.store.SaveAttachment(w.ctx, "p1", a.ID, master.AttachmentResult{State: master.AttachmentPending, RetryIn: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if got := claim(); len(got) != 0 {
		t.Fatalf("claimed %+v before its retry time", got)
	}
	if _, err := w.pool.Exec(w.ctx, `UPDATE attachments SET not_before = now() WHERE id = $1`, a.ID); err != nil {
		t.Fatal(err)
	}
	b := claim()
	if len(b) != 1 || b[0].Attempts != 2 {
		t.Fatalf("claimed %+v, want the file at attempt 2", b)
	}
	if err := w.store.SaveAttachment(w.ctx, "p1", a.ID, master.AttachmentResult{State: master.AttachmentPending, Release: true}); err != nil {
		t.Fatal(err)
	}
	if c := claim(); len(c) != 1 || c[0].Attempts != 2 {
		t.Fatalf("claimed %+v, want the given-back file at once, its attempt not counted", c)
	}
	if err := w.store.SaveAttachment(w.ctx, "p1", a.ID, master.AttachmentResult{State: master.AttachmentFailed, Note: "the download failed"}); err != nil {
		t.Fatal(err)
	}
	if got := w.attachments(turn.ID)[0]; got.State != master.AttachmentFailed || got.Note != "the download failed" || got.Data != nil {
		t.Errorf("file = %+v, want failed with its note", got)
	}
}

func TestFilesHandedToTasksAndKeptByAHandoff(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	other := w.recordWith(w.startSession(), "elsewhere", "", master.IncomingAttachment{ID: "z", Filename: "z.txt", Size: 1})
	turn := w.recordWith(s, "m1", "", master.IncomingAttachment{ID: "a1", Filename: "a.txt", Size: 3})
	a := w.attachments(turn.ID)[0]
	claimed, err := w.store.ClaimAttachments(w.ctx, master.Scope{}, "p1", 10, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range claimed {
		if err := w.store.SaveAttachment(w.ctx, "p1", c.ID, master.AttachmentResult{State: master.AttachmentStored, Data: []byte("abc"), Size: 3}); err != nil {
			t.Fatal(err)
		}
	}
	w.lease(s, "p1")
	if _, err := w.store.OpenTurn(w.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	foreign := w.attachments(other.ID)[0].ID
	g := master.Guard{SessionID: s.ID, TurnID: turn.ID, Owner: "p1"}
	ids, err := w.store.Delegate(w.ctx, g, []master.NewTask{{Role: "researcher", Instruction: "read it", Attachments: []int64{a.ID, foreign}}})
	if err != nil {
		t.Fatal(err)
	}
	task := w.task(ids[0])
	if !slices.Equal(task.Attachments, []int64{a.ID}) {
		t.Fatalf("task files = %v, want only %d: a file of another turn is never handed over", task.Attachments, a.ID)
	}
	in, err := w.store.TaskInput(w.ctx, task)
	if err != nil || len(in.Attachments) != 1 || string(in.Attachments[0].Data) != "abc" {
		t.Fatalf("TaskInput = %+v, %v; want the file with its content", in.Attachments, err)
	}
	c := w.claim("w1", 1)[0]
	next, err := w.store.CompleteTask(w.ctx, c.ID, c.Attempt, master.Outcome{State: master.TaskDone, Result: "read",
		Handoff: &master.Handoff{Role: "writer", Instruction: "write it up"}})
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := w.store.TurnTasks(w.ctx, next.TurnID)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 || tasks[1].Role != "writer" || !slices.Equal(tasks[1].Attachments, []int64{a.ID}) {
		t.Errorf("tasks = %+v, want the handoff to writer with the same file", tasks)
	}
}

func TestAMessageWithFilesIsATurnOfItsOwn(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.startSession()
	g, ids := w.delegateRound(s, task("planner", "plan"))
	p := w.claim("w1", 1)[0]
	if _, err := w.store.CompleteTask(w.ctx, p.ID, p.Attempt, master.Outcome{State: master.TaskNeedInfo, Question: "which file?"}); err != nil {
		t.Fatal(err)
	}
	if err := w.store.Finish(w.ctx, g, master.Finish{Kind: master.OutQuestion, State: master.TurnWaiting, Parts: []string{"Which file?"}}); err != nil {
		t.Fatal(err)
	}
	turn := w.recordWith(s, "answer-with-file", "", master.IncomingAttachment{ID: "a1", Filename: "this.txt", Size: 3})
	if turn.State != master.TurnQueued {
		t.Errorf("the message with a file is %s, want a queued turn of its own", turn.State)
	}
	if got := w.task(ids[0]); got.State != master.TaskNeedInfo || got.QA[0].Answer != "" {
		t.Errorf("the waiting task = %+v, want it left unanswered", got)
	}
}
