package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/callonbot/callon/bot/discordfake"
)

// outageTarget is how soon after Discord comes back every reply that
// waited for it must be posted.
const outageTarget = 10 * time.Second

// outages measures the recovery from outages of Discord's message posts,
// one world per length in Sizes.Outages, all at once.
func (b *bench) outages(ctx context.Context) ([]StageResult, error) {
	res := make([]StageResult, len(b.sizes.Outages))
	errs := make([]error, len(b.sizes.Outages))
	var wg sync.WaitGroup
	for i, d := range b.sizes.Outages {
		wg.Go(func() {
			r, err := guard(func() ([]StageResult, error) { return b.outage(ctx, d) })
			if err == nil {
				res[i] = r[0]
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return res, errors.Join(errs...)
}

// outage takes Discord's message posts down for length while OutageTeams
// teams are each sent a message, spread over the outage (the first at
// its start), and measures how long after Discord came back each reply
// was posted, and that each was posted once.
func (b *bench) outage(ctx context.Context, length time.Duration) ([]StageResult, error) {
	w, err := b.newWorld(ctx, script(0))
	if err != nil {
		return nil, err
	}
	defer w.close()
	if err := w.start(ctx); err != nil {
		return nil, err
	}
	n := max(b.sizes.OutageTeams, 1)
	threads := make([]string, n)
	for i := range threads {
		threads[i] = w.team(fmt.Sprintf("bench outage %s %d", length, i))
	}
	w.settle()
	w.dc.Down(discordfake.RouteCreateMessage, http.StatusServiceUnavailable)
	began := time.Now()
	msgs := make([]discordfake.Message, n)
	for i, th := range threads {
		if err := sleepUntil(ctx, began.Add(length*time.Duration(i)/time.Duration(n))); err != nil {
			return nil, err
		}
		msgs[i] = w.dc.UserMessage(th, w.dc.UserID(), fmt.Sprintf("[direct] during the outage %d", i))
	}
	if err := sleepUntil(ctx, began.Add(length)); err != nil {
		return nil, err
	}
	tried := w.dc.Calls(discordfake.RouteCreateMessage)
	w.dc.ClearFaults(discordfake.RouteCreateMessage)
	ended := time.Now()
	var after []time.Duration
	twice := 0
	for i, th := range threads {
		var reply discordfake.Message
		w.wait(func() bool {
			for _, m := range w.dc.Messages(th) {
				if m.AuthorID == w.dc.BotUserID() && m.Reference != nil && m.Reference.MessageID == msgs[i].ID {
					reply = m
					return true
				}
			}
			return false
		}, "a reply after the outage")
		after = append(after, reply.Timestamp.Sub(ended))
		replies := 0
		for _, m := range w.dc.Messages(th) {
			if m.AuthorID == w.dc.BotUserID() && m.Reference != nil && m.Reference.MessageID == msgs[i].ID {
				replies++
			}
		}
		if replies != 1 {
			twice++
		}
	}
	d := dist(after)
	r := StageResult{
		Name: fmt.Sprintf("outage.%s", length), Samples: len(after), Latency: d,
		What: fmt.Sprintf("Discord's message posts down for %s while %d teams are sent a message: from Discord's return to each reply", length, n),
		Values: []Value{
			{"tried", float64(tried), "posts during the outage"},
			{"not once", float64(twice), "replies posted other than once"},
		},
	}.target(fmt.Sprintf("every reply ≤ %s after, once", outageTarget), d.Max <= ms(outageTarget) && twice == 0)
	return []StageResult{r}, w.tb.err()
}

// sleepUntil waits until t or ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
