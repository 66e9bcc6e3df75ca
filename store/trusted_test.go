package store_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/callonbot/callon/master"
)

// A bot's turns per hour in a guild are capped across its threads and the
// teams it starts, even when they are recorded at once: they are counted
// under a lock per guild and bot. People and other bots are not counted.
func TestBotTurnsCappedAcrossThreads(t *testing.T) {
	t.Parallel()
	w := setup(t)
	const guild, bot = "g-bots", "900"
	caps := master.SessionCaps{PerGuild: 10, BotPerHour: 5}
	start := func(n int) (master.Session, error) {
		return w.store.StartSession(w.ctx, master.Session{GuildID: guild, ChannelID: "c1", ThreadID: fmt.Sprint(5000 + n),
			OwnerID: bot, Goal: "g", RequestedByBot: bot, RequestMessageID: fmt.Sprint(5000 + n)}, master.DefaultRoles(), "", "brief", caps)
	}
	var sessions []master.Session
	for i := range 2 {
		s, err := start(i)
		if err != nil {
			t.Fatal(err)
		}
		if s.RequestedByBot != bot || s.RequestMessageID != fmt.Sprint(5000+i) {
			t.Errorf("session %d: requested by %q, message %q", s.ID, s.RequestedByBot, s.RequestMessageID)
		}
		sessions = append(sessions, s)
	}
	a := master.Admission{BotPerHour: caps.BotPerHour, BotCapped: "bots: stop"}
	var wg sync.WaitGroup
	states := make([]master.TurnState, 8)
	for i := range states {
		wg.Go(func() {
			s := sessions[i%2]
			turn, _, err := w.store.RecordTurn(w.ctx, master.Turn{SessionID: s.ID, MessageID: fmt.Sprint(6000 + i), GuildID: guild,
				ChannelID: s.ThreadID, AuthorID: bot, AuthorBot: true, Content: "pong"}, a)
			if err != nil {
				t.Error(err)
			}
			states[i] = turn.State
		})
	}
	wg.Wait()
	queued := 0
	for _, st := range states {
		if st == master.TurnQueued {
			queued++
		}
	}
	if queued != 3 {
		t.Errorf("%d of the bot's messages queued, want 3 (5 per hour, 2 spent on the teams it started)", queued)
	}
	if n, err := w.store.BotTurns(w.ctx, guild, bot); err != nil || n != 5 {
		t.Errorf("BotTurns = %d, %v; want 5", n, err)
	}
	if _, err := start(9); !errors.Is(err, master.ErrBotCapped) {
		t.Errorf("a team past the cap: %v, want ErrBotCapped", err)
	}
	// A person, and the same id as a person's, are not a bot's turns.
	turn, _, err := w.store.RecordTurn(w.ctx, master.Turn{SessionID: sessions[0].ID, MessageID: "7000", GuildID: guild,
		ChannelID: sessions[0].ThreadID, AuthorID: "901", Content: "hi"}, a)
	if err != nil || turn.State != master.TurnQueued || turn.AuthorBot {
		t.Errorf("a person's message: %+v, %v", turn, err)
	}
}
