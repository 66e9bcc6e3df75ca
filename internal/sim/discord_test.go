package sim

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/bwmarrin/discordgo"
	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/master"
)

// discord is the Discord the outbox posts to: the project's fake Discord
// (bot/discordtest), reached through the real Messenger, with faults the
// sequence injects before each send: a failure that may pass (503), a
// refusal for good (403), and a message Discord posts but answers with
// an error (the answer lost). It records which nonces Discord refused for
// good, so that a message given up on can be checked against them, and
// now and then lets the second sender flush in the middle of a send.
type discord struct {
	seq  *sequence
	dc   *discordtest.Server
	next *bot.Messenger

	mu      sync.Mutex
	refused map[string]bool // nonces Discord refused for good
	faults  bool            // inject faults; off while the sequence settles
	down    bool            // an outage of message posts
	inSend  bool            // a send is under way: no second sender inside it
}

func newDiscord(s *sequence) *discord {
	dc := discordtest.New(s.t)
	sess, err := bot.NewSession(dc.Token(), dc.URL(), bot.Intents) // REST only
	if err != nil {
		s.t.Fatal(err)
	}
	return &discord{seq: s, dc: dc, next: bot.NewMessenger(sess), refused: map[string]bool{}, faults: true}
}

// thread opens the team's thread in #general.
func (d *discord) thread() string {
	return d.dc.AddThread(d.dc.ChannelID("general"), "ship it", discordgo.ChannelTypeGuildPublicThread).ID
}

func (d *discord) Send(ctx context.Context, m master.OutMessage) (string, error) {
	d.mu.Lock()
	nested := d.inSend
	second := d.faults && !nested && d.seq.rng.IntN(6) == 0
	d.inSend = true
	if d.faults && !d.down {
		switch r := d.seq.rng.IntN(100); {
		case r < 8:
			d.dc.Fail(discordtest.RouteCreateMessage, 1, http.StatusServiceUnavailable)
		case r < 9:
			d.dc.Fail(discordtest.RouteCreateMessage, 1, http.StatusForbidden)
		case r < 14:
			d.dc.FailAfter(discordtest.RouteCreateMessage, 1, http.StatusInternalServerError)
		}
	}
	d.mu.Unlock()
	if !nested {
		defer func() {
			d.mu.Lock()
			d.inSend = false
			d.mu.Unlock()
		}()
	}
	if second {
		// A second sender (another process) flushes while this one is in
		// the middle of a send: it must neither take this one's messages
		// nor overtake them.
		d.seq.trace = append(d.seq.trace, "  second sender flushes in the middle of a send")
		if _, err := d.seq.disp2.Flush(ctx); err != nil {
			d.seq.fatalf("second sender: %v", err)
		}
	}
	id, err := d.next.Send(ctx, m)
	if errors.Is(err, master.ErrPermanent) {
		d.mu.Lock()
		d.refused[m.Nonce] = true
		d.mu.Unlock()
	}
	return id, err
}

func (d *discord) Find(ctx context.Context, m master.OutMessage) (string, error) {
	return d.next.Find(ctx, m)
}
func (d *discord) Edit(ctx context.Context, ch, id, content string) error {
	return d.next.Edit(ctx, ch, id, content)
}
func (d *discord) Typing(ctx context.Context, ch string) error  { return d.next.Typing(ctx, ch) }
func (d *discord) Archive(ctx context.Context, ch string) error { return d.next.Archive(ctx, ch) }

// outage starts or ends an outage of message posts.
func (d *discord) outage(down bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = down
	if down {
		d.dc.Down(discordtest.RouteCreateMessage, http.StatusServiceUnavailable)
	} else {
		d.dc.ClearFaults(discordtest.RouteCreateMessage)
	}
}

// calm ends the faults and any outage: the sequence settles.
func (d *discord) calm() {
	d.outage(false)
	d.mu.Lock()
	d.faults = false
	d.mu.Unlock()
}

// posted lists the bot's messages in the thread, in the order Discord
// created them.
func (d *discord) posted() []discordtest.Message {
	var out []discordtest.Message
	for _, m := range d.dc.Messages(d.seq.thread) {
		if m.AuthorID == d.dc.BotUserID() {
			out = append(out, m)
		}
	}
	return out
}

// outRow is what the checks need of an outbox row.
type outRow struct {
	id                int64
	kind, state       string
	nonce, discordID  string
	turnID, part, seq int64
}

func (s *sequence) outboxRows() map[string]outRow {
	rows, err := s.pool.Query(s.ctx, `SELECT id, kind, state, nonce, coalesce(discord_message_id, ''), coalesce(turn_id, 0), part, seq FROM outbox`)
	if err != nil {
		s.fatalf("outbox rows: %v", err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (outRow, error) {
		var o outRow
		return o, r.Scan(&o.id, &o.kind, &o.state, &o.nonce, &o.discordID, &o.turnID, &o.part, &o.seq)
	})
	if err != nil {
		s.fatalf("outbox rows: %v", err)
	}
	byNonce := make(map[string]outRow, len(list))
	for _, o := range list {
		byNonce[o.nonce] = o
	}
	return byNonce
}

// checkDelivery holds after every event, against what the fake Discord
// holds: every message marked sent is there, under the id recorded; every
// one given up on was refused for good by Discord; the thread's messages
// came in the order of their rows (a reply's parts in order, nothing
// overtaking what was queued before it); each row was posted once; and
// nothing of a turn was posted after the team was dissolved.
func (s *sequence) checkDelivery() {
	s.t.Helper()
	rows := s.outboxRows()
	posted := s.discord.posted()
	seen := map[string]string{}
	var last int64
	for i, m := range posted {
		o, ok := rows[m.Nonce]
		if !ok {
			s.fatalf("Discord has a message with nonce %q that no outbox row has: %q", m.Nonce, m.Content)
		}
		if _, twice := seen[m.Nonce]; twice {
			s.fatalf("outbox row %d (%s) was posted twice", o.id, o.kind)
		}
		seen[m.Nonce] = m.ID
		if o.id < last {
			s.fatalf("outbox row %d (%s, part %d) reached the thread after row %d: out of order", o.id, o.kind, o.part, last)
		}
		last = o.id
		if s.dissolvedAt >= 0 && i >= s.dissolvedAt && (o.kind == string(master.OutReply) || o.kind == string(master.OutQuestion) || o.kind == string(master.OutApproval)) {
			s.fatalf("a %s of turn %d (outbox row %d) was posted after the team was dissolved", o.kind, o.turnID, o.id)
		}
	}
	s.discord.mu.Lock()
	refused := s.discord.refused
	s.discord.mu.Unlock()
	for _, o := range rows {
		switch o.state {
		case "sent":
			id, ok := seen[o.nonce]
			if !ok {
				s.fatalf("outbox row %d (%s) is marked sent, yet Discord never received it", o.id, o.kind)
			}
			if id != o.discordID {
				s.fatalf("outbox row %d (%s) is marked sent as message %q, but Discord has it as %q", o.id, o.kind, o.discordID, id)
			}
		case "failed":
			if !refused[o.nonce] {
				s.fatalf("outbox row %d (%s) was given up on, yet Discord never refused it for good (a failure that may pass, retried for a day)", o.id, o.kind)
			}
		}
	}
}
