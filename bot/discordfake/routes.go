package discordfake

import (
	"net/http"
	"strings"
)

// Route names a REST endpoint: the method and the path pattern below
// /api/v9, as in "POST /channels/{c}/messages". Use the constants.
type Route string

// The routes the server implements.
const (
	RouteGetGateway    Route = "GET /gateway"
	RouteGetGatewayBot Route = "GET /gateway/bot"

	RouteGetCurrentUser        Route = "GET /users/@me"
	RouteGetCurrentUserGuilds  Route = "GET /users/@me/guilds"
	RouteGetCurrentApplication Route = "GET /applications/@me"
	RouteGetOAuth2Application  Route = "GET /oauth2/applications/@me" // discordgo's Application("@me")
	RouteGetGuild              Route = "GET /guilds/{g}"
	RouteGetGuildChannels      Route = "GET /guilds/{g}/channels"
	RouteGetGuildMember        Route = "GET /guilds/{g}/members/{u}"
	RouteListActiveThreads     Route = "GET /guilds/{g}/threads/active"

	RouteOverwriteGlobalCommands Route = "PUT /applications/{app}/commands"
	RouteGetGlobalCommands       Route = "GET /applications/{app}/commands"
	RouteOverwriteGuildCommands  Route = "PUT /applications/{app}/guilds/{g}/commands"
	RouteGetGuildCommands        Route = "GET /applications/{app}/guilds/{g}/commands"

	RouteCreateInteractionResponse Route = "POST /interactions/{id}/{token}/callback"
	RouteCreateFollowup            Route = "POST /webhooks/{app}/{token}"
	RouteGetOriginalResponse       Route = "GET /webhooks/{app}/{token}/messages/@original"
	RouteEditOriginalResponse      Route = "PATCH /webhooks/{app}/{token}/messages/@original"
	RouteDeleteOriginalResponse    Route = "DELETE /webhooks/{app}/{token}/messages/@original"
	RouteGetFollowup               Route = "GET /webhooks/{app}/{token}/messages/{m}"
	RouteEditFollowup              Route = "PATCH /webhooks/{app}/{token}/messages/{m}"
	RouteDeleteFollowup            Route = "DELETE /webhooks/{app}/{token}/messages/{m}"

	RouteCreateMessage Route = "POST /channels/{c}/messages"
	RouteListMessages  Route = "GET /channels/{c}/messages"
	RouteGetMessage    Route = "GET /channels/{c}/messages/{m}"
	RouteEditMessage   Route = "PATCH /channels/{c}/messages/{m}"
	RouteDeleteMessage Route = "DELETE /channels/{c}/messages/{m}"

	RouteAddReaction    Route = "PUT /channels/{c}/messages/{m}/reactions/{emoji}/@me"
	RouteRemoveReaction Route = "DELETE /channels/{c}/messages/{m}/reactions/{emoji}/@me"

	RouteStartThreadFromMessage Route = "POST /channels/{c}/messages/{m}/threads"
	RouteStartThread            Route = "POST /channels/{c}/threads"
	RouteJoinThread             Route = "PUT /channels/{c}/thread-members/@me"
	RouteGetChannel             Route = "GET /channels/{c}"
	RouteModifyChannel          Route = "PATCH /channels/{c}"
	RouteTriggerTyping          Route = "POST /channels/{c}/typing"
)

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /gateway", s.handleGateway)
	mux.HandleFunc("GET /gateway/", s.handleGateway)
	mux.HandleFunc("GET /cdn/attachments/{c}/{id}/{name}", s.serveAttachment)
	mux.HandleFunc("GET /media/attachments/{c}/{id}/{name}", s.serveAttachment)
	// GET /users/@me/guilds answers the bot (a Bot token) and a person
	// signed in with OAuth2 (a Bearer token) alike, as Discord does.
	s.oauthRoutes(mux, s.wrap(RouteGetCurrentUserGuilds, s.serve(s.getCurrentUserGuilds)))
	handlers := map[Route]handler{
		RouteGetGateway:                s.getGateway,
		RouteGetGatewayBot:             s.getGateway,
		RouteGetCurrentUser:            s.getCurrentUser,
		RouteGetCurrentApplication:     s.getCurrentApplication,
		RouteGetOAuth2Application:      s.getCurrentApplication,
		RouteGetGuild:                  s.getGuild,
		RouteGetGuildChannels:          s.getGuildChannels,
		RouteGetGuildMember:            s.getGuildMember,
		RouteListActiveThreads:         s.listActiveThreads,
		RouteOverwriteGlobalCommands:   s.overwriteCommands,
		RouteGetGlobalCommands:         s.getCommands,
		RouteOverwriteGuildCommands:    s.overwriteCommands,
		RouteGetGuildCommands:          s.getCommands,
		RouteCreateInteractionResponse: s.createInteractionResponse,
		RouteListChannelWebhooks:       s.listChannelWebhooks,
		RouteCreateWebhook:             s.createWebhook,
		RouteGetOriginalResponse:       s.getWebhookMessage,
		RouteEditOriginalResponse:      s.editWebhookMessage,
		RouteDeleteOriginalResponse:    s.deleteWebhookMessage,
		RouteGetFollowup:               s.getWebhookMessage,
		RouteEditFollowup:              s.editWebhookMessage,
		RouteDeleteFollowup:            s.deleteWebhookMessage,
		RouteCreateMessage:             s.createMessage,
		RouteListMessages:              s.listMessages,
		RouteGetMessage:                s.getMessage,
		RouteEditMessage:               s.editMessage,
		RouteDeleteMessage:             s.deleteMessage,
		RouteAddReaction:               s.addReaction,
		RouteRemoveReaction:            s.removeReaction,
		RouteStartThreadFromMessage:    s.startThreadFromMessage,
		RouteStartThread:               s.startThread,
		RouteJoinThread:                s.joinThread,
		RouteGetChannel:                s.getChannel,
		RouteModifyChannel:             s.modifyChannel,
		RouteTriggerTyping:             s.triggerTyping,
	}
	for route, h := range handlers {
		method, path, _ := strings.Cut(string(route), " ")
		mux.HandleFunc(method+" /api/v9"+path, s.wrap(route, s.serve(h)))
	}
	// A follow-up and a channel webhook's execution share a path.
	mux.HandleFunc("POST /api/v9/webhooks/{app}/{token}", s.webhookOrFollowup(
		s.wrap(RouteCreateFollowup, s.serve(s.createFollowup)), s.wrap(RouteExecuteWebhook, s.executeWebhook)))
	mux.HandleFunc("/", s.notFound)
	return mux
}

// wrap counts the call, checks the bot token and plays injected faults.
func (s *Server) wrap(route Route, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		authorized := !s.revoked && r.Header.Get("Authorization") == "Bot "+s.cfg.token
		s.calls[route]++
		f, faulted := fault{}, false
		if authorized {
			f, faulted = s.popFaultLocked(route)
		}
		s.notifyLocked()
		s.mu.Unlock()

		if faulted && f.after {
			h(discardResponse{h: http.Header{}}, r)
		}
		if faulted {
			setRateLimitHeaders(w.Header(), route, &f)
			f.write(w)
			return
		}
		setRateLimitHeaders(w.Header(), route, nil)
		if !authorized {
			writeError(w, &apiError{status: http.StatusUnauthorized, Message: "401: Unauthorized"})
			return
		}
		h(w, r)
	}
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.unknown = append(s.unknown, r.Method+" "+r.URL.Path)
	s.notifyLocked()
	s.mu.Unlock()
	setRateLimitHeaders(w.Header(), Route(r.Method+" "+r.URL.Path), nil)
	writeError(w, &apiError{status: http.StatusNotFound, Message: "404: Not Found"})
}

// discardResponse is a ResponseWriter that drops what it is given: the
// answer of a call a FailAfter fault replaces.
type discardResponse struct{ h http.Header }

func (d discardResponse) Header() http.Header         { return d.h }
func (d discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (d discardResponse) WriteHeader(int)             {}
