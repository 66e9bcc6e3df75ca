package bot

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/bwmarrin/discordgo"
)

// InvitePermissions are the permissions the bot asks for in its invite:
// View Channels, Send Messages, Send Messages in Threads, Create Public
// Threads, Read Message History, Embed Links, Add Reactions.
const InvitePermissions = discordgo.PermissionViewChannel | discordgo.PermissionSendMessages |
	discordgo.PermissionSendMessagesInThreads | discordgo.PermissionCreatePublicThreads |
	discordgo.PermissionReadMessageHistory | discordgo.PermissionEmbedLinks | discordgo.PermissionAddReactions

// InviteURL is the OAuth2 URL that adds the application's bot to a
// server, with its commands and the permissions it needs.
func InviteURL(appID string) string {
	q := url.Values{
		"client_id":   {appID},
		"scope":       {"bot applications.commands"},
		"permissions": {strconv.FormatInt(InvitePermissions, 10)},
	}
	return "https://discord.com/oauth2/authorize?" + q.Encode()
}

// ApplicationID asks Discord which application a bot token belongs to
// (GET /applications/@me), so an invite can be made from the token alone.
func ApplicationID(ctx context.Context, token, apiURL string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s, err := NewSession(token, apiURL, Intents)
	if err != nil {
		return "", err
	}
	// discordgo v0.29 takes no context here; the session's client has a
	// timeout of its own.
	app, err := s.Application("@me")
	if err != nil {
		return "", describeAuthError(fmt.Errorf("look up the application of DISCORD_TOKEN: %w", err))
	}
	return app.ID, nil
}
