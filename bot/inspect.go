package bot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/bwmarrin/discordgo"
)

// Application flags that say the privileged Message Content intent is
// enabled in the Developer Portal: the first for verified apps, the
// second ("limited") for apps in fewer than 100 servers.
const (
	flagMessageContent        = 1 << 18
	flagMessageContentLimited = 1 << 19
)

// ErrBadToken is a bot token Discord rejects (HTTP 401).
var ErrBadToken = errors.New("DISCORD_TOKEN was rejected by Discord (HTTP 401)")

// Application is what the Developer Portal says of the bot's application,
// as callon doctor reports it.
type Application struct {
	ID, Name string
	BotID    string // the bot user's id
	// MessageContent says the privileged Message Content intent is
	// enabled (Bot → Privileged Gateway Intents).
	MessageContent bool
	// Public says anyone may add the bot to a server (Bot → Public Bot).
	Public bool
}

// GuildInfo is a server the bot is in.
type GuildInfo struct{ ID, Name string }

// ChannelAccess is the bot's permissions in one channel, and what it
// lacks of RequiredPermissions there.
type ChannelAccess struct {
	Name    string // "" when the channel could not be read
	Missing []string
	// Webhooks says whether the bot may manage the channel's webhooks,
	// which worker personas need (a permission teams do not otherwise).
	Webhooks bool
}

// RequiredPermissions are the permissions a team's channel must give the
// bot: those its invite asks for.
const RequiredPermissions = InvitePermissions

// Inspector reads, over REST, what callon doctor checks of the bot's
// Discord setup. It never connects to the gateway.
type Inspector struct{ s *discordgo.Session }

// NewInspector returns an Inspector for the bot token, talking to apiURL
// (DISCORD_API_URL).
func NewInspector(token, apiURL string) (*Inspector, error) {
	s, err := NewSession(token, apiURL, Intents)
	if err != nil {
		return nil, err
	}
	return &Inspector{s: s}, nil
}

// Application reads GET /applications/@me; ErrBadToken when Discord
// rejects the token.
func (in *Inspector) Application(ctx context.Context) (Application, error) {
	body, err := in.s.RequestWithBucketID(http.MethodGet, discordgo.EndpointApplication("@me"), nil,
		discordgo.EndpointApplication("@me"), discordgo.WithContext(ctx))
	if err != nil {
		return Application{}, inspectError("read the application", err)
	}
	var app struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Flags     int64  `json:"flags"`
		BotPublic bool   `json:"bot_public"`
		Bot       *struct {
			ID string `json:"id"`
		} `json:"bot"`
	}
	if err := json.Unmarshal(body, &app); err != nil {
		return Application{}, fmt.Errorf("read the application: %w", err)
	}
	a := Application{ID: app.ID, Name: app.Name, Public: app.BotPublic,
		MessageContent: app.Flags&(flagMessageContent|flagMessageContentLimited) != 0}
	if app.Bot != nil {
		a.BotID = app.Bot.ID
	}
	if a.BotID == "" {
		me, err := in.s.User("@me", discordgo.WithContext(ctx))
		if err != nil {
			return Application{}, inspectError("read the bot user", err)
		}
		a.BotID = me.ID
	}
	return a, nil
}

// Guilds lists the servers the bot is in, at most limit of them, and
// whether there are more.
func (in *Inspector) Guilds(ctx context.Context, limit int) ([]GuildInfo, bool, error) {
	page := min(limit+1, 200)
	gs, err := in.s.UserGuilds(page, "", "", false, discordgo.WithContext(ctx))
	if err != nil {
		return nil, false, inspectError("list the bot's servers", err)
	}
	out := make([]GuildInfo, 0, len(gs))
	for _, g := range gs {
		out = append(out, GuildInfo{ID: g.ID, Name: g.Name})
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// Access computes the bot's permissions in a channel of a guild (in the
// guild as a whole when channelID is "") from the guild's roles, the
// bot's roles and the channel's overwrites, and names the required ones
// it lacks.
func (in *Inspector) Access(ctx context.Context, guildID, channelID, botID string) (ChannelAccess, error) {
	var a ChannelAccess
	if channelID != "" {
		ch, err := in.s.Channel(channelID, discordgo.WithContext(ctx))
		if err != nil {
			return a, inspectError("read channel "+channelID, err)
		}
		a.Name = ch.Name
	}
	m, err := (&Channels{s: in.s}).GuildMember(ctx, guildID, channelID, botID)
	if err != nil {
		return a, inspectError("compute the bot's permissions", err)
	}
	a.Missing = PermissionNames(RequiredPermissions &^ m.Permissions)
	a.Webhooks = m.Permissions&discordgo.PermissionManageWebhooks != 0
	return a, nil
}

// PermissionNames names the permissions of a bit set as Discord's client
// does, in the order of the invite's list.
func PermissionNames(bits int64) []string {
	var out []string
	for _, p := range []struct {
		bit  int64
		name string
	}{
		{discordgo.PermissionViewChannel, "View Channels"},
		{discordgo.PermissionSendMessages, "Send Messages"},
		{discordgo.PermissionSendMessagesInThreads, "Send Messages in Threads"},
		{discordgo.PermissionCreatePublicThreads, "Create Public Threads"},
		{discordgo.PermissionReadMessageHistory, "Read Message History"},
		{discordgo.PermissionEmbedLinks, "Embed Links"},
		{discordgo.PermissionAddReactions, "Add Reactions"},
	} {
		if bits&p.bit != 0 {
			out = append(out, p.name)
		}
	}
	return out
}

// inspectError names what failed; a rejected token is ErrBadToken.
func inspectError(what string, err error) error {
	var rerr *discordgo.RESTError
	if errors.As(err, &rerr) && rerr.Response != nil {
		if rerr.Response.StatusCode == http.StatusUnauthorized {
			return ErrBadToken
		}
		if rerr.Message != nil && rerr.Message.Message != "" {
			return fmt.Errorf("%s: HTTP %d: %s", what, rerr.Response.StatusCode, strings.TrimSpace(rerr.Message.Message))
		}
		return fmt.Errorf("%s: HTTP %d", what, rerr.Response.StatusCode)
	}
	return fmt.Errorf("%s: %w", what, err)
}
