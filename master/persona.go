package master

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// personaNameReserve is what a member's part leaves of a message for its
// name, when it is posted in callon's own voice ("**Researcher:** …")
// because the channel's webhook cannot be had.
const personaNameReserve = 100

// Line is one member's part of a reply presented as an exchange between
// the team's members (personas): written by the master, like the rest of
// its reply.
type Line struct {
	Member string `json:"member"`
	Text   string `json:"text"`
}

// Persona is who a part of a reply is posted as: a member of the team,
// under its name and picture. The part stays the master's words: a
// persona is only how they are presented.
type Persona struct {
	Name   string `json:"name"`             // the name it posts under (PersonaName)
	Role   string `json:"role"`             // the member's role
	Avatar string `json:"avatar,omitempty"` // the roles file's picture; "" for a generated one
	// Parent is the channel whose webhook posts in the thread.
	Parent string `json:"parent,omitempty"`
	// Fallback, set by the outbox, posts the part in callon's own voice,
	// named: the channel's webhook cannot be had.
	Fallback bool `json:"-"`
}

// ErrNoPersonas is a Messenger that cannot post in a member's name in a
// channel (the bot may not manage the channel's webhooks).
var ErrNoPersonas = errors.New("members cannot post in their own names here")

// Bounds of a reply presented as an exchange.
const (
	maxExchange     = 6    // members' parts in one reply
	maxExchangeLine = 1500 // characters of one member's part
)

// PersonaNotice is what a team is told, once, when its members cannot
// post in their own names.
func PersonaNotice(parent string) string {
	return fmt.Sprintf("-# 🎭 The team's members speak through me here: I need the **Manage Webhooks** permission in <#%s> "+
		"to post their parts under their own names. Whoever runs this server can grant it.", parent)
}

// reply ends the turn with the master's reply (after its review, if any):
// the coordinator's text with the reviewer's caveat under it, then, when
// the team speaks with personas, each member's part under its own name.
// It is one decision, written in one place: the parts only present it.
func (o *Orchestrator) reply(ctx context.Context, g Guard, tc turnContext, text string, exchange []Line, caveat string, usage Usage) error {
	text = withCaveat(text, caveat)
	if len(exchange) == 0 || !tc.session.Features.Personas {
		return o.end(ctx, g, tc.turn, OutcomeReply, text+exchangeText(exchange), usage)
	}
	parts, personas := personaParts(tc.session, tc.roster, text, exchange)
	if err := o.post(ctx, g, Finish{Kind: OutReply, State: TurnDone, Parts: parts, Personas: personas}, usage, "personas", len(exchange)); err != nil {
		return err
	}
	o.cfg.Metrics.TurnEnded(OutcomeReply, time.Since(tc.turn.CreatedAt))
	return nil
}

// exchangeText is members' parts in the coordinator's voice, named: for a
// team without personas (a revision after they were turned off).
func exchangeText(exchange []Line) string {
	var b strings.Builder
	for _, l := range exchange {
		fmt.Fprintf(&b, "\n\n**%s:** %s", PersonaName(l.Member), l.Text)
	}
	return b.String()
}

// personaParts splits a reply into its messages: the coordinator's text
// first (callon's own voice: it replies to the user's message, which a
// webhook cannot), then each member's part under its persona, each split
// to fit with room for a name, the whole bounded by maxReplyParts. A part
// that repeats the one before it is dropped: it would read as a double,
// and a resend could not tell the two apart.
func personaParts(s Session, roster []Role, text string, exchange []Line) ([]string, []*Persona) {
	var parts []string
	var personas []*Persona
	add := func(p *Persona, chunks []string) {
		for _, c := range chunks {
			if n := len(parts); n > 0 && parts[n-1] == c && samePersona(personas[n-1], p) {
				continue
			}
			parts, personas = append(parts, c), append(personas, p)
		}
	}
	add(nil, Split(text, MaxMessageLen))
	for _, l := range exchange {
		role, _ := findRole(roster, l.Member)
		add(&Persona{Name: PersonaName(l.Member), Role: l.Member, Avatar: role.Avatar, Parent: s.ChannelID}, Split(l.Text, MaxMessageLen-personaNameReserve))
	}
	if len(parts) > maxReplyParts {
		parts, personas = parts[:maxReplyParts], personas[:maxReplyParts]
		last := maxReplyParts - 1
		parts[last] = Truncate(parts[last], MaxMessageLen-140) + "\n*(reply shortened)*"
	}
	if len(parts) == 0 {
		parts, personas = []string{"(no answer)"}, []*Persona{nil}
	}
	return parts, personas
}

func samePersona(a, b *Persona) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && a.Role == b.Role)
}

// exchangeSchema is reply's exchange argument, offered to a team with
// personas: the members' parts, in the order they are posted.
func exchangeSchema(e decisionEnv) map[string]any {
	return map[string]any{
		"type": "array", "maxItems": maxExchange,
		"description": "Optional: present your reply as a short exchange. After your text (posted first, in your voice), each " +
			"member's part is posted under its own name and picture, in this order. You write every part: use what the " +
			"members found, in their voice; nothing else of theirs is posted.",
		"items": object([]string{"member", "text"}, map[string]any{
			"member": map[string]any{"type": "string", "enum": RoleNames(e.roster)},
			"text":   map[string]any{"type": "string", "maxLength": maxExchangeLine},
		}),
	}
}

// parseExchange validates reply's exchange: members of the team, parts
// that say something, within the bounds.
func parseExchange(lines []Line, e decisionEnv) ([]Line, error) {
	if len(lines) == 0 {
		return nil, nil
	}
	if !e.personas {
		return nil, errors.New("reply takes an exchange only when the team speaks with personas: put everything in \"text\"")
	}
	if len(lines) > maxExchange {
		return nil, fmt.Errorf("an exchange has at most %d parts, got %d", maxExchange, len(lines))
	}
	names := RoleNames(e.roster)
	out := make([]Line, 0, len(lines))
	for i, l := range lines {
		text := strings.TrimSpace(l.Text)
		switch {
		case !slices.Contains(names, l.Member):
			return nil, fmt.Errorf("exchange[%d].member %q is not on the team; use one of: %s", i, l.Member, strings.Join(names, ", "))
		case text == "":
			return nil, fmt.Errorf("exchange[%d].text is empty", i)
		case len([]rune(text)) > maxExchangeLine:
			return nil, fmt.Errorf("exchange[%d].text is longer than %d characters", i, maxExchangeLine)
		}
		out = append(out, Line{Member: l.Member, Text: text})
	}
	return out, nil
}

// PersonaFallbacks is what the outbox needs from Postgres when members
// cannot post in their own names.
type PersonaFallbacks interface {
	// PersonaFallback records it for a session and, the first time,
	// queues notice in its thread; it reports whether it was the first.
	PersonaFallback(ctx context.Context, sessionID int64, notice string) (bool, error)
}

// sendAs posts a member's part under its persona; where the Messenger
// cannot (ErrNoPersonas), the team is told once and the part is posted in
// callon's own voice, named, with its nonce.
func (d *Outbox) sendAs(ctx context.Context, m OutMessage) (string, error) {
	id, err := d.out.Send(ctx, m)
	if !errors.Is(err, ErrNoPersonas) {
		return id, err
	}
	if d.cfg.Personas != nil {
		first, ferr := d.cfg.Personas.PersonaFallback(ctx, m.SessionID, PersonaNotice(cmp.Or(m.Persona.Parent, m.ChannelID)))
		if ferr != nil {
			return "", fmt.Errorf("record the fallback to callon's voice: %w", ferr)
		}
		if first {
			d.log.Warn("members cannot post in their own names: callon lacks Manage Webhooks; posting in its own voice",
				"session_id", m.SessionID, "channel_id", m.Persona.Parent, "err", err)
		}
	}
	fb := *m.Persona
	fb.Fallback = true
	m.Persona = &fb
	return d.out.Send(ctx, m)
}
