package bot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/redact"
)

// WebhookStore keeps the webhook callon posts personas through, one per
// parent channel. Its token is a secret: never logged, never shown.
type WebhookStore interface {
	// ChannelWebhook returns a channel's webhook, or master.ErrNotFound.
	ChannelWebhook(ctx context.Context, channelID string) (id, token string, err error)
	// SaveChannelWebhook records a channel's webhook.
	SaveChannelWebhook(ctx context.Context, guildID, channelID, id, token string) error
	// DropChannelWebhook forgets a channel's webhook if it is still id.
	DropChannelWebhook(ctx context.Context, channelID, id string) error
}

// Discord's JSON error codes for webhooks.
const (
	codeUnknownWebhook = 10015
	codeMaxWebhooks    = 30007
	codeInvalidWHToken = 50027
	webhookName        = "callon team"
	deniedFor          = 10 * time.Minute
)

// personas posts members' parts through each parent channel's webhook:
// found among the channel's webhooks (one callon's application made) or
// made, then kept as a row and in memory. A channel where callon may not
// manage webhooks is remembered for a while, so its parts go straight to
// callon's own voice without a refused request each.
type personas struct {
	s       *discordgo.Session
	store   WebhookStore
	appID   func() string
	avatars Avatars

	mu     sync.Mutex
	hooks  map[string]hook        // by parent channel
	denied map[string]time.Time   // parent channel → until when
	known  map[string]bool        // webhook ids of callon's, for telling its own messages
	making map[string]*sync.Mutex // by parent channel: one finds or makes its webhook at a time
}

type hook struct{ id, token string }

func newPersonas(s *discordgo.Session, store WebhookStore, appID func() string, avatars Avatars) *personas {
	return &personas{s: s, store: store, appID: appID, avatars: avatars,
		hooks: map[string]hook{}, denied: map[string]time.Time{}, known: map[string]bool{}, making: map[string]*sync.Mutex{}}
}

// own reports whether a message was posted by one of callon's webhooks
// (one this process used): callon never reacts to itself.
func (p *personas) own(webhookID string) bool {
	if p == nil || webhookID == "" {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.known[webhookID]
}

// webhook returns the parent channel's webhook, finding or making it
// when create is set; master.ErrNoPersonas when callon may not.
func (p *personas) webhook(ctx context.Context, parent string, create bool) (hook, error) {
	p.mu.Lock()
	h, ok := p.hooks[parent]
	making := p.making[parent]
	if making == nil {
		making = &sync.Mutex{}
		p.making[parent] = making
	}
	p.mu.Unlock()
	if ok {
		return h, nil
	}
	// Two parts of one parent at once (two threads) must not both list
	// nothing and make a webhook each: the channel holds fifteen at most.
	making.Lock()
	defer making.Unlock()
	p.mu.Lock()
	h, ok = p.hooks[parent]
	until := p.denied[parent]
	p.mu.Unlock()
	if ok {
		return h, nil
	}
	id, token, err := p.store.ChannelWebhook(ctx, parent)
	switch {
	case err == nil:
		return p.keep(parent, hook{id, token}), nil
	case !errors.Is(err, master.ErrNotFound):
		return hook{}, err
	case !create:
		return hook{}, master.ErrNotFound
	case time.Now().Before(until):
		return hook{}, master.ErrNoPersonas
	}
	list, err := p.s.ChannelWebhooks(parent, discordgo.WithContext(ctx))
	if err != nil {
		return hook{}, p.refused(parent, fmt.Errorf("list the webhooks of %s: %w", parent, err))
	}
	var found *discordgo.Webhook
	for _, w := range list {
		if w.ApplicationID != "" && w.ApplicationID == p.appID() && w.Token != "" && w.Type == discordgo.WebhookTypeIncoming {
			found = w
			break
		}
	}
	if found == nil {
		if found, err = p.s.WebhookCreate(parent, webhookName, "", discordgo.WithContext(ctx)); err != nil {
			return hook{}, p.refused(parent, fmt.Errorf("create a webhook in %s: %w", parent, err))
		}
	}
	if err := p.store.SaveChannelWebhook(ctx, found.GuildID, parent, found.ID, found.Token); err != nil {
		return hook{}, err
	}
	return p.keep(parent, hook{found.ID, found.Token}), nil
}

func (p *personas) keep(parent string, h hook) hook {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hooks[parent] = h
	p.known[h.id] = true
	return h
}

// refused turns Discord's refusal to list or make webhooks (no Manage
// Webhooks, or the channel's fifteen taken) into master.ErrNoPersonas,
// remembered for a while; other errors pass.
func (p *personas) refused(parent string, err error) error {
	switch discordCode(err) {
	case codeMissingPerms, codeMissingAccess, codeMaxWebhooks:
		p.mu.Lock()
		p.denied[parent] = time.Now().Add(deniedFor)
		p.mu.Unlock()
		return fmt.Errorf("%w: %w", master.ErrNoPersonas, err)
	}
	return classify(err)
}

// forget drops a webhook Discord says is gone.
func (p *personas) forget(ctx context.Context, parent string, h hook) {
	p.mu.Lock()
	if p.hooks[parent] == h {
		delete(p.hooks, parent)
	}
	p.mu.Unlock()
	_ = p.store.DropChannelWebhook(ctx, parent, h.id)
}

// sendAs posts a part under its member's name and picture through the
// parent channel's webhook (in the thread, by thread_id), pinging
// nobody. A webhook that is gone is made again, once. Its errors never
// carry the token.
func (m *Messenger) sendAs(ctx context.Context, msg master.OutMessage) (string, error) {
	p, persona := m.p, msg.Persona
	parent := cmp.Or(persona.Parent, msg.ChannelID)
	params := &discordgo.WebhookParams{Content: msg.Content, Username: persona.Name, AvatarURL: p.avatars.URL(persona),
		AllowedMentions: noMentions()}
	thread := ""
	if msg.ChannelID != parent {
		thread = msg.ChannelID
	}
	for attempt := 0; ; attempt++ {
		h, err := p.webhook(ctx, parent, true)
		if err != nil {
			return "", err
		}
		sent, err := m.s.WebhookThreadExecute(h.id, h.token, true, thread, params, discordgo.WithContext(ctx))
		if err == nil {
			return sent.ID, nil
		}
		err = redact.Error(fmt.Errorf("post as %s in %s: %w", persona.Role, msg.ChannelID, err), h.token)
		if code := discordCode(err); (code == codeUnknownWebhook || code == codeInvalidWHToken) && attempt == 0 {
			p.forget(ctx, parent, h)
			continue
		}
		return "", classify(err)
	}
}

// ownVoice is a part posted in callon's own voice: the member named
// first (personas off, or no webhook to be had).
func ownVoice(msg master.OutMessage) string {
	if msg.Persona == nil {
		return msg.Content
	}
	return master.Truncate("**"+msg.Persona.Name+":** "+msg.Content, master.MaxMessageLen)
}

// findAs looks for a part among the channel's messages since a minute
// before it may have been sent: posted by callon's webhook under the
// member's name, or in callon's own voice, named.
func (m *Messenger) findAs(ctx context.Context, msg master.OutMessage) (string, error) {
	me := m.botID()
	hookID := ""
	if m.p != nil {
		if h, err := m.p.webhook(ctx, cmp.Or(msg.Persona.Parent, msg.ChannelID), false); err == nil {
			hookID = h.id
		} else if !errors.Is(err, master.ErrNotFound) {
			return "", err
		}
	}
	fallback := ownVoice(msg)
	return m.findSince(ctx, msg, func(x *discordgo.Message) bool {
		switch {
		case x.Author == nil:
			return false
		case hookID != "" && x.WebhookID == hookID && x.Author.Username == msg.Persona.Name && x.Content == msg.Content:
			return true
		}
		return x.Author.ID == me && x.Content == fallback
	})
}
