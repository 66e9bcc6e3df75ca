package bot

import (
	"context"
	"sync"
	"testing"

	"github.com/callonbot/callon/bot/discordfake"
	"github.com/callonbot/callon/master"
)

// memHooks is a WebhookStore in memory.
type memHooks struct {
	mu    sync.Mutex
	hooks map[string][2]string
}

func (m *memHooks) ChannelWebhook(_ context.Context, channelID string) (string, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.hooks[channelID]
	if !ok {
		return "", "", master.ErrNotFound
	}
	return h[0], h[1], nil
}

func (m *memHooks) SaveChannelWebhook(_ context.Context, _, channelID, id, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.hooks[channelID] = [2]string{id, token}
	return nil
}

func (m *memHooks) DropChannelWebhook(_ context.Context, channelID, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.hooks[channelID][0] == id {
		delete(m.hooks, channelID)
	}
	return nil
}

// Parts of one parent channel's threads posted at once, with no webhook
// known yet, make one webhook between them: a channel holds fifteen at
// most, and each made and then forgotten would count.
func TestOneWebhookPerParentWhateverComesAtOnce(t *testing.T) {
	t.Parallel()
	srv, err := discordfake.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	s, err := NewSession(srv.Token(), srv.URL(), Intents)
	if err != nil {
		t.Fatal(err)
	}
	parent := srv.ChannelID("general")
	p := newPersonas(s, &memHooks{hooks: map[string][2]string{}}, srv.AppID, Avatars{})
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Go(func() {
			h, err := p.webhook(t.Context(), parent, true)
			if err != nil {
				t.Error(err)
			}
			ids[i] = h.id
		})
	}
	wg.Wait()
	if made := srv.Webhooks(parent); len(made) != 1 {
		t.Errorf("the channel has %d webhooks, want 1", len(made))
	}
	for _, id := range ids {
		if id != ids[0] {
			t.Errorf("parts got webhooks %v, want the same one", ids)
			break
		}
	}
}
