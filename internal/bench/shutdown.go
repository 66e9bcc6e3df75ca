package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/callonbot/callon/bot/discordfake"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
)

// shutdown stops callon (as SIGTERM does) at the instant Discord accepts
// its acknowledgement of a /roles set form, right after it acknowledged a
// /dissolve confirmation, Shutdowns times; it measures how long each stop
// took and checks that every acknowledged change took effect, once (the
// closing summaries are posted by the next start).
func (b *bench) shutdown(ctx context.Context) ([]StageResult, error) {
	w, err := b.newWorld(ctx, script(0))
	if err != nil {
		return nil, err
	}
	defer w.close()
	st, err := store.Open(ctx, w.dbURL, nil)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	general := w.dc.ChannelID("general")
	var took []time.Duration
	var threads []string
	for i := range max(b.sizes.Shutdowns, 1) {
		if err := w.start(ctx); err != nil {
			return nil, err
		}
		thread := w.team(fmt.Sprintf("bench shutdown %d", i))
		threads = append(threads, thread)
		confirm := w.confirmDissolve(thread)
		form := must(w.dc.SlashCommand(discordfake.SlashCommand{Name: "roles", ChannelID: general, Permissions: manageChannels,
			Options: []discordfake.CommandOption{discordfake.Subcommand("set", discordfake.StringOption("name", fmt.Sprint("poet", i)))}}))
		must(form.WaitModal())
		stopped := make(chan time.Time, 1)
		w.dc.OnAck(func(ix *discordfake.Interaction) {
			if ix.CustomID() != "" && !strings.HasPrefix(ix.CustomID(), "dissolve:") {
				stopped <- time.Now()
				w.sigterm()
			}
		})
		click := must(w.dc.ClickButton(confirm))
		w.wait(click.Acked, "the /dissolve confirmation acknowledged")
		submit := must(w.dc.SubmitModal(form, map[string]string{"description": "Writes short poems", "prompt": "You write haiku."}))
		w.wait(submit.Acked, "the /roles set form acknowledged")
		err := w.stop()
		took = append(took, time.Since(<-stopped))
		w.stop = nil
		w.dc.OnAck(nil)
		if err != nil {
			return nil, err
		}
	}
	// Count what took effect, and start once more to post the summaries.
	done := 0
	for i, thread := range threads {
		if _, err := st.ActiveSession(ctx, thread); errors.Is(err, master.ErrNotFound) {
			done++
		}
		changes, err := st.RoleChanges(ctx, w.dc.GuildID(), general, 100)
		if err != nil {
			return nil, err
		}
		n := 0
		for _, c := range changes {
			if slices.Contains(c.Names, fmt.Sprint("poet", i)) {
				n++
			}
		}
		if n == 1 {
			done++
		}
	}
	if err := w.start(ctx); err != nil {
		return nil, err
	}
	summaries := 0
	for _, thread := range threads {
		count := func() int {
			n := 0
			for _, m := range w.dc.Messages(thread) {
				if m.AuthorID == w.dc.BotUserID() && strings.HasPrefix(m.Content, "👋 **Team dissolved**") {
					n++
				}
			}
			return n
		}
		w.wait(func() bool { return count() > 0 }, "the closing summary")
		summaries += count()
	}
	acked := 2 * len(threads)
	d := dist(took)
	r := StageResult{
		Name: "shutdown", Samples: len(took), Latency: d,
		What: "SIGTERM as Discord accepts callon's acknowledgement of a /roles set form, just after a /dissolve confirmation's: from the stop to callon's exit",
		Values: []Value{
			{"acknowledged", float64(acked), "changes"},
			{"done", float64(done), "changes"},
			{"summaries", float64(summaries), "posted (want one per team)"},
		},
	}.target(fmt.Sprintf("every acknowledged change done, once; stop ≤ %s", shutdownGrace),
		done == acked && summaries == len(threads) && d.Max <= ms(shutdownGrace))
	return []StageResult{r}, w.tb.err()
}

// shutdownGrace is bot.DefaultShutdownGrace: how long a stop waits for
// acknowledged work at most.
const shutdownGrace = 20 * time.Second

// manageChannels is the permission /roles needs.
const manageChannels = 1 << 4

// confirmDissolve runs /dissolve in thread and returns the click on its
// confirmation's Dissolve button.
func (w *world) confirmDissolve(thread string) discordfake.ClickButton {
	ix := must(w.dc.SlashCommand(discordfake.SlashCommand{Name: "dissolve", ChannelID: thread}))
	var click discordfake.ClickButton
	w.wait(func() bool {
		m, ok := ix.Original()
		for _, b := range m.Buttons() {
			if ok && strings.HasPrefix(b.CustomID, "dissolve:") {
				click = discordfake.ClickButton{MessageID: m.ID, CustomID: b.CustomID, ChannelID: thread}
				return true
			}
		}
		return false
	}, "the /dissolve confirmation")
	return click
}
