package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/callonbot/callon/master"
)

// startOn starts a session on a surface, attached to a chat process when
// attached is set.
func (w *world) startOn(surface master.Surface, attached string) master.Session {
	w.t.Helper()
	n := fixtureSeq.Add(1)
	s, err := w.store.StartSession(w.ctx, master.Session{GuildID: "g1", ChannelID: "c1", ThreadID: fmt.Sprint("th-", n),
		OwnerID: "u1", Goal: "ship it", Surface: surface, AttachedTo: attached}, master.DefaultRoles(), "kickoff!", "", master.SessionCaps{})
	if err != nil {
		w.t.Fatalf("StartSession: %v", err)
	}
	return s
}

// live registers owner as a live process until the test ends.
func (w *world) live(owner string) {
	w.t.Helper()
	l := w.store.NewLiveness(owner)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	w.t.Cleanup(func() { cancel(); <-done })
	<-l.Ready()
}

// Every claim takes only the rows of the sessions of its scope: a bot's
// (the zero Scope) Discord sessions', a chat's own sessions'.
func TestClaimsTakeTheirScopeOnly(t *testing.T) {
	t.Parallel()
	w := setup(t)
	discord := w.startOn(master.SurfaceDiscord, "")
	chatA := w.startOn(master.SurfaceTerminal, "chat-a")
	chatB := w.startOn(master.SurfaceTerminal, "chat-b")
	tasks := map[int64]int64{} // session → its task
	for _, s := range []master.Session{discord, chatA, chatB} {
		w.turn(s.ID) // running, nothing delegated: the master's turn
		_, ids := w.enqueue(s.ID, task("researcher", "look"))
		tasks[s.ID] = ids[0]
	}
	for _, c := range []struct {
		name  string
		scope master.Scope
		want  []master.Session
	}{
		{"bot", master.Scope{}, []master.Session{discord}},
		{"chat a", master.ChatScope("chat-a"), []master.Session{chatA}},
		{"chat b", master.ChatScope("chat-b"), []master.Session{chatB}},
		{"a chat with no team", master.ChatScope("chat-c"), nil},
	} {
		var want []int64
		for _, s := range c.want {
			want = append(want, s.ID)
		}
		pending, err := w.store.PendingSessions(w.ctx, c.scope, "p-"+c.name)
		if err != nil || !slices.Equal(pending, want) {
			t.Errorf("%s: PendingSessions = %v, %v; want %v", c.name, pending, err, want)
		}
		var sessions []int64
		active, err := w.store.ActiveTurns(w.ctx, c.scope)
		for _, ts := range active {
			if !slices.Contains(sessions, ts.Turn.SessionID) {
				sessions = append(sessions, ts.Turn.SessionID)
			}
		}
		if err != nil || !slices.Equal(sessions, want) {
			t.Errorf("%s: ActiveTurns are of sessions %v, %v; want %v", c.name, sessions, err, want)
		}
		msgs, err := w.store.ClaimOutbox(w.ctx, c.scope, "p-"+c.name, 10, leaseTime)
		sessions = nil
		for _, m := range msgs {
			sessions = append(sessions, m.SessionID)
		}
		if err != nil || !slices.Equal(sessions, want) {
			t.Errorf("%s: ClaimOutbox took messages of sessions %v, %v; want the kickoffs of %v", c.name, sessions, err, want)
		}
		claimed, err := w.store.ClaimTasks(w.ctx, c.scope, "p-"+c.name, 10, leaseTime)
		var ids, wantTasks []int64
		for _, k := range claimed {
			ids = append(ids, k.ID)
		}
		for _, s := range c.want {
			wantTasks = append(wantTasks, tasks[s.ID])
		}
		if err != nil || !slices.Equal(ids, wantTasks) {
			t.Errorf("%s: ClaimTasks took %v, %v; want %v", c.name, ids, err, wantTasks)
		}
	}
	points, err := w.store.CatchUpPoints(w.ctx)
	if err != nil || len(points) != 1 || points[0].SessionID != discord.ID {
		t.Errorf("CatchUpPoints = %+v, %v; want the Discord session's only", points, err)
	}
}

// A chat resumes the terminal team talked to last that no live chat
// shows: a team whose chat ended, or died, is taken over; a live chat's
// is not; a Discord team never is.
func TestResumeSession(t *testing.T) {
	t.Parallel()
	w := setup(t)
	w.live("chat-live")
	w.live("chat-new")
	w.live("chat-next")
	shown := w.startOn(master.SurfaceTerminal, "chat-live")
	left := w.startOn(master.SurfaceTerminal, "")
	died := w.startOn(master.SurfaceTerminal, "chat-died") // registered once, its lock free
	if _, err := w.pool.Exec(w.ctx, `INSERT INTO processes (owner) VALUES ('chat-died')`); err != nil {
		t.Fatal(err)
	}
	w.startOn(master.SurfaceDiscord, "")
	w.turn(left.ID) // talked to after the others started

	for _, c := range []struct {
		owner string
		want  int64
	}{{"chat-new", left.ID}, {"chat-next", died.ID}} {
		got, err := w.store.ResumeSession(w.ctx, c.owner)
		if err != nil || got.ID != c.want || got.AttachedTo != c.owner || got.Surface != master.SurfaceTerminal {
			t.Errorf("%s resumed %+v, %v; want session %d attached to it", c.owner, got, err, c.want)
		}
	}
	if got, err := w.store.ResumeSession(w.ctx, "chat-third"); !errors.Is(err, master.ErrNotFound) {
		t.Errorf("with every terminal team shown by a live chat, ResumeSession = %+v, %v; want ErrNotFound", got, err)
	}
	if err := w.store.DetachSession(w.ctx, left.ID, "chat-new"); err != nil {
		t.Fatal(err)
	}
	if got, err := w.store.ResumeSession(w.ctx, "chat-third"); err != nil || got.ID != left.ID {
		t.Errorf("after chat-new left its team, ResumeSession = %+v, %v; want %d", got, err, left.ID)
	}
	if got, err := w.store.Session(w.ctx, shown.ID); err != nil || got.AttachedTo != "chat-live" {
		t.Errorf("the live chat's team is %+v, %v; want it still attached to chat-live", got, err)
	}
}
