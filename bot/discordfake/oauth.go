package discordfake

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/bwmarrin/discordgo"
)

// OAuth2, for web apps that sign people in with Discord (the
// authorization code grant):
//
//   - GET /oauth2/authorize checks client_id, redirect_uri and the scopes
//     and, as if the person had approved at once, redirects to
//     redirect_uri with a code and the state it was given. The person
//     is the default user unless AuthorizeAs names another.
//   - POST /api/oauth2/token (and under /api/v9, /api/v10) exchanges a
//     code, once, for an access token: the client authenticates with
//     HTTP Basic (or client_id and client_secret in the form), and
//     redirect_uri must be the one the code was issued for.
//   - GET /api/v10/users/@me and /api/v10/users/@me/guilds (and under
//     /api/v9) answer a Bearer token: the user, and the partial guilds
//     they are in (every guild of the fake) with owner and their
//     permissions computed from @everyone and their roles.
//
// The fake knowingly differs from Discord here: no consent page, no
// refresh of tokens, and tokens never expire.

// oauthGrant is a code or a token: whom it is for.
type oauthGrant struct {
	user     string
	redirect string
	scopes   []string
}

// OAuthClientSecret returns the application's client secret, which the
// token endpoint requires.
func (s *Server) OAuthClientSecret() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.oauthSecret == "" {
		s.oauthSecret = randomHex(16)
	}
	return s.oauthSecret
}

// AuthorizeAs makes the next authorizations be the given user's ("" for
// the default user).
func (s *Server) AuthorizeAs(userID string) {
	s.mu.Lock()
	s.oauthUser = userID
	s.mu.Unlock()
}

// oauthRoutes serves the OAuth2 code grant; botGuilds answers GET
// /users/@me/guilds when the bot asks it, with its Bot token.
func (s *Server) oauthRoutes(mux *http.ServeMux, botGuilds http.HandlerFunc) {
	mux.HandleFunc("GET /oauth2/authorize", s.oauthAuthorize)
	for _, prefix := range []string{"/api", "/api/v9", "/api/v10"} {
		mux.HandleFunc("POST "+prefix+"/oauth2/token", s.oauthToken)
	}
	people := s.oauthBearer(s.oauthGuilds)
	for _, prefix := range []string{"/api/v9", "/api/v10"} {
		mux.HandleFunc("GET "+prefix+"/users/@me/guilds", func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.Header.Get("Authorization"), "Bot ") {
				botGuilds(w, r)
				return
			}
			people(w, r)
		})
	}
	mux.HandleFunc("GET /api/v10/users/@me", s.oauthBearer(s.oauthMe))
}

func (s *Server) oauthAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case q.Get("client_id") != s.cfg.appID:
		writeError(w, &apiError{status: 400, Code: 50035, Message: "Invalid OAuth2 application"})
		return
	case err != nil || redirect.Scheme == "" || redirect.Host == "":
		writeError(w, &apiError{status: 400, Code: 50035, Message: "Invalid OAuth2 redirect_uri"})
		return
	case q.Get("response_type") != "code":
		writeError(w, &apiError{status: 400, Code: 50035, Message: "Invalid response_type"})
		return
	}
	scopes := strings.Fields(q.Get("scope"))
	code := randomHex(12)
	s.mu.Lock()
	if s.oauthCodes == nil {
		s.oauthCodes, s.oauthTokens = map[string]oauthGrant{}, map[string]oauthGrant{}
	}
	who := s.oauthUser
	if who == "" {
		who = s.human
	}
	s.oauthCodes[code] = oauthGrant{user: who, redirect: redirect.String(), scopes: scopes}
	s.notifyLocked()
	s.mu.Unlock()
	back := redirect.Query()
	back.Set("code", code)
	if st := q.Get("state"); st != "" {
		back.Set("state", st)
	}
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (s *Server) oauthToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	want := s.OAuthClientSecret()
	s.mu.Lock()
	defer s.mu.Unlock()
	if id != s.cfg.appID || secret != want {
		writeJSON(w, 401, map[string]string{"error": "invalid_client"})
		return
	}
	if r.PostForm.Get("grant_type") != "authorization_code" {
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	code := r.PostForm.Get("code")
	g, found := s.oauthCodes[code]
	delete(s.oauthCodes, code) // once
	if !found || g.redirect != r.PostForm.Get("redirect_uri") {
		writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
		return
	}
	tok := randomHex(16)
	s.oauthTokens[tok] = g
	s.notifyLocked()
	writeJSON(w, 200, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 604800,
		"refresh_token": randomHex(16), "scope": strings.Join(g.scopes, " ")})
}

// oauthBearer runs h for the user of a valid Bearer token.
func (s *Server) oauthBearer(h func(w http.ResponseWriter, g oauthGrant)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		g, found := s.oauthTokens[tok]
		s.mu.Unlock()
		if !ok || !found {
			writeError(w, &apiError{status: 401, Code: 0, Message: "401: Unauthorized"})
			return
		}
		h(w, g)
	}
}

func (s *Server) oauthMe(w http.ResponseWriter, g oauthGrant) {
	s.mu.Lock()
	u := s.userLocked(g.user)
	s.mu.Unlock()
	writeJSON(w, 200, userJSON(u))
}

func (s *Server) oauthGuilds(w http.ResponseWriter, g oauthGrant) {
	hasGuilds := false
	for _, sc := range g.scopes {
		hasGuilds = hasGuilds || sc == "guilds"
	}
	if !hasGuilds {
		writeError(w, &apiError{status: 403, Code: 50001, Message: "Missing Access"})
		return
	}
	s.mu.Lock()
	out := make([]any, 0, len(s.guilds))
	for _, gd := range s.guilds {
		owner := g.user == s.human
		perms := int64(everyonePermissions)
		for _, id := range gd.members[g.user] {
			for _, r := range gd.roles {
				if r.id == id {
					perms |= r.perms
				}
			}
		}
		if owner || perms&discordgo.PermissionAdministrator != 0 {
			perms = discordgo.PermissionAll
		}
		out = append(out, map[string]any{"id": gd.id, "name": gd.name, "icon": nil, "owner": owner,
			"permissions": strconv.FormatInt(perms, 10), "features": []string{}})
	}
	s.mu.Unlock()
	writeJSON(w, 200, out)
}
