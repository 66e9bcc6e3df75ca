package discordfake

import (
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// Channel webhooks: listed and created with Manage Webhooks, executed
// with their token (wait, thread_id). An execution's message is authored
// by the webhook under the username and avatar it gives, with webhook_id
// (and the application's id, for a webhook the application made).
const (
	RouteListChannelWebhooks Route = "GET /channels/{c}/webhooks"
	RouteCreateWebhook       Route = "POST /channels/{c}/webhooks"
	// RouteExecuteWebhook shares its path with RouteCreateFollowup
	// (POST /webhooks/{app}/{token}): a call is counted as this route
	// when the id is a channel webhook's.
	RouteExecuteWebhook Route = "POST /webhooks/{id}/{token} (execute)"
)

// webhook is a channel's incoming webhook.
type webhook struct {
	id, token, channelID, guildID, name string
	appID                               string // the application that made it; "" for one made by a person
}

func (h *webhook) json(withToken bool) map[string]any {
	out := map[string]any{"id": h.id, "type": int(discordgo.WebhookTypeIncoming), "guild_id": h.guildID,
		"channel_id": h.channelID, "name": h.name, "avatar": nil}
	if h.appID != "" {
		out["application_id"] = h.appID
	}
	if withToken {
		out["token"] = h.token
	}
	return out
}

// Webhook is a channel webhook as the server stores it.
type Webhook struct {
	ID, ChannelID, Name string
	Token               string // the secret its executions carry
	ByApp               bool   // made by the application (callon)
}

// Webhooks lists a channel's webhooks, in the order they were made.
func (s *Server) Webhooks(channelID string) []Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Webhook
	for _, h := range s.webhookList {
		if h.channelID == channelID {
			out = append(out, Webhook{ID: h.id, ChannelID: h.channelID, Name: h.name, Token: h.token, ByApp: h.appID != ""})
		}
	}
	return out
}

// DenyWebhooks takes Manage Webhooks away from the bot in a channel:
// listing and creating its webhooks answer 403 Missing Permissions, and
// the channel's overwrites deny it to the bot's role (what a permission
// computed from them shows). Executing a webhook needs no permission, as
// in Discord.
func (s *Server) DenyWebhooks(channelID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noWebhooks[channelID] = true
	if c := s.channels[channelID]; c != nil {
		role := s.guildLocked(c.guildID).botRole
		o := Overwrite{ID: role, Deny: discordgo.PermissionManageWebhooks}
		for i, x := range c.overwrites {
			if x.ID == role && !x.Member {
				o.Allow, o.Deny = x.Allow&^discordgo.PermissionManageWebhooks, x.Deny|discordgo.PermissionManageWebhooks
				c.overwrites = append(c.overwrites[:i:i], c.overwrites[i+1:]...)
				break
			}
		}
		c.overwrites = append(c.overwrites, o)
	}
	s.notifyLocked()
}

// DeleteWebhook deletes a webhook, as an admin may: executing it answers
// 404 Unknown Webhook.
func (s *Server) DeleteWebhook(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, h := range s.webhookList {
		if h.id == id {
			s.webhookList = append(s.webhookList[:i], s.webhookList[i+1:]...)
			break
		}
	}
	s.notifyLocked()
}

// HoldWebhook makes the next execution of a webhook whose content is
// content post its message and then wait, before answering, until
// release is called (or the test ends): a crash can so strike after a
// webhook's message was posted and before the poster learned of it.
// held is closed once the message is posted.
func (s *Server) HoldWebhook(content string) (held <-chan struct{}, release func()) {
	h := &hold{content: content, posted: make(chan struct{}), release: make(chan struct{})}
	s.mu.Lock()
	s.holds = append(s.holds, h)
	s.mu.Unlock()
	var once bool
	rel := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !once {
			once = true
			close(h.release)
		}
	}
	return h.posted, rel
}

// hold is a webhook execution HoldWebhook holds.
type hold struct {
	content string
	posted  chan struct{}
	release chan struct{}
}

func (s *Server) channelWebhookAllowedLocked(id string) (*channel, *apiError) {
	c := s.channels[id]
	switch {
	case c == nil:
		return nil, errUnknownChannel()
	case c.isThread():
		return nil, errWrongChannelType() // webhooks belong to a thread's parent
	case s.noWebhooks[c.id] || s.denied[c.id]:
		return nil, errMissingPermissions()
	}
	return c, nil
}

func (s *Server) listChannelWebhooks(r *request) (int, any, *apiError) {
	c, e := s.channelWebhookAllowedLocked(r.PathValue("c"))
	if e != nil {
		return fail(e)
	}
	out := []any{}
	for _, h := range s.webhookList {
		if h.channelID == c.id {
			out = append(out, h.json(true))
		}
	}
	return ok(out)
}

func (s *Server) createWebhook(r *request) (int, any, *apiError) {
	c, e := s.channelWebhookAllowedLocked(r.PathValue("c"))
	if e != nil {
		return fail(e)
	}
	var body struct {
		Name string `json:"name"`
	}
	if e := decode(r.body, &body); e != nil {
		return fail(e)
	}
	if n := utf8.RuneCountInString(body.Name); n < 1 || n > 80 || badWebhookName(body.Name) {
		return fail(formError("BASE_TYPE_BAD_NAME", "Invalid webhook name", "name"))
	}
	count := 0
	for _, h := range s.webhookList {
		if h.channelID == c.id {
			count++
		}
	}
	if count >= 15 {
		return fail(&apiError{status: 400, Code: 30007, Message: "Maximum number of webhooks reached (15)"})
	}
	h := &webhook{id: s.newID(), token: randomHex(32), channelID: c.id, guildID: c.guildID, name: body.Name, appID: s.cfg.appID}
	s.webhookList = append(s.webhookList, h)
	s.notifyLocked()
	return ok(h.json(true))
}

// badWebhookName reports a name Discord refuses for a webhook or as an
// execution's username.
func badWebhookName(name string) bool {
	l := strings.ToLower(name)
	return strings.Contains(l, "discord") || strings.Contains(l, "clyde") || l == "everyone" || l == "here"
}

// webhookOrFollowup serves POST /webhooks/{id}/{token}: a channel
// webhook's execution, or an interaction's follow-up (the id is then the
// application's).
func (s *Server) webhookOrFollowup(followup, execute http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("app") == s.cfg.appID {
			followup(w, r)
			return
		}
		execute(w, r)
	}
}

// executeWebhook posts a webhook's message; a held one waits, after
// posting, for its release before it answers.
func (s *Server) executeWebhook(w http.ResponseWriter, hr *http.Request) {
	body, files, e := readPayload(hr)
	if e != nil {
		writeError(w, e)
		return
	}
	s.mu.Lock()
	out, h, e := s.executeWebhookLocked(&request{Request: hr, body: body, files: files})
	var data []byte
	if e == nil && out != nil {
		data, _ = json.Marshal(out)
	}
	s.mu.Unlock()
	if h != nil {
		close(h.posted)
		select {
		case <-h.release:
		case <-hr.Context().Done():
		}
	}
	switch {
	case e != nil:
		writeError(w, e)
	case data == nil:
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(data)
	}
}

func (s *Server) executeWebhookLocked(r *request) (any, *hold, *apiError) {
	var h *webhook
	for _, x := range s.webhookList {
		if x.id == r.PathValue("app") {
			h = x
		}
	}
	if h == nil {
		return nil, nil, errUnknownWebhook()
	}
	if h.token != r.PathValue("token") {
		return nil, nil, errInvalidWebhookToken()
	}
	var wb struct {
		Username  string `json:"username"`
		AvatarURL string `json:"avatar_url"`
	}
	if e := decode(r.body, &wb); e != nil {
		return nil, nil, e
	}
	mb, e := r.message()
	if e != nil {
		return nil, nil, e
	}
	if wb.Username != "" && (utf8.RuneCountInString(wb.Username) > 80 || badWebhookName(wb.Username)) {
		return nil, nil, formError("USERNAME_INVALID", "Invalid username", "username")
	}
	if !mb.nonEmpty(len(r.files)) {
		return nil, nil, errEmptyMessage()
	}
	if e := validateMessage(mb.content(), mb.Embeds, mb.Components, mb.Flags); e != nil {
		return nil, nil, e
	}
	c := s.channels[h.channelID]
	if tid := r.URL.Query().Get("thread_id"); tid != "" {
		t := s.channels[tid]
		if t == nil || !t.isThread() || t.parentID != h.channelID {
			return nil, nil, errUnknownChannel()
		}
		t.archived = false // Discord unarchives the thread
		c = t
	}
	author := user{id: h.id, name: cmpOr(wb.Username, h.name), bot: true}
	m := s.newMessageLocked(c, author, mb, r.files)
	m.webhookID, m.avatarURL = h.id, wb.AvatarURL
	s.storeLocked(m)
	s.dispatchLocked("MESSAGE_CREATE", s.messageJSONLocked(m, true))
	var held *hold
	for i, x := range s.holds {
		if x.content == m.content {
			held = x
			s.holds = append(s.holds[:i], s.holds[i+1:]...)
			break
		}
	}
	if r.URL.Query().Get("wait") != "true" {
		return nil, held, nil
	}
	return s.messageJSONLocked(m, true), held, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
