package dashboard

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// OAuth lets server admins sign in with Discord (OAuth2, the
// authorization code grant, scopes identify and guilds).
type OAuth struct {
	ClientID     string // the application's id (DISCORD_APP_ID)
	ClientSecret string // DISCORD_CLIENT_SECRET
	RedirectURL  string // …/dashboard/auth/callback, as registered with Discord
	// DiscordURL is Discord's base URL (DISCORD_API_URL; default
	// https://discord.com): the authorization page is under it, the
	// token endpoint and the API under its /api.
	DiscordURL string
	// HTTPClient makes the token and API requests; nil is a client with
	// a 10 s timeout.
	HTTPClient *http.Client
}

// Discord's permission bits that make a member an admin of a server.
const (
	permAdministrator = 1 << 3
	permManageGuild   = 1 << 5
)

func (o *OAuth) config() *oauth2.Config {
	base := strings.TrimRight(o.DiscordURL, "/")
	if base == "" {
		base = "https://discord.com"
	}
	return &oauth2.Config{
		ClientID: o.ClientID, ClientSecret: o.ClientSecret, RedirectURL: o.RedirectURL,
		Scopes: []string{"identify", "guilds"},
		Endpoint: oauth2.Endpoint{AuthURL: base + "/oauth2/authorize", TokenURL: base + "/api/oauth2/token",
			AuthStyle: oauth2.AuthStyleInHeader},
	}
}

func (o *OAuth) client() *http.Client {
	if o.HTTPClient != nil {
		return o.HTTPClient
	}
	return &http.Client{Timeout: 10 * time.Second}
}

// oauthState is the state parameter's cookie: the value sent to Discord
// and where to go after.
type oauthState struct {
	State   string `json:"s"`
	Next    string `json:"n"`
	Expires int64  `json:"exp"`
}

// oauthStart sends the browser to Discord's authorization page with a
// fresh state, kept in a signed cookie for ten minutes.
func (d *Dashboard) oauthStart(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if d.cfg.OAuth == nil {
		d.fail(w, r, http.StatusNotFound, "Signing in with Discord is not set up here.")
		return
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	st := oauthState{State: base64.RawURLEncoding.EncodeToString(b), Next: safeNext(r.URL.Query().Get("next")),
		Expires: d.cfg.Now().Add(10 * time.Minute).Unix()}
	value, err := d.signer.sign(stateCookie, st)
	if err != nil {
		d.fail(w, r, http.StatusInternalServerError, "Could not start signing in.")
		return
	}
	// Lax, not Strict: the browser comes back from Discord, another
	// site, and must bring the state with it.
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: value, Path: "/dashboard/", MaxAge: 600,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, d.cfg.OAuth.config().AuthCodeURL(st.State), http.StatusFound)
}

// oauthCallback checks the state against its cookie, exchanges the code,
// reads the user and their guilds, and signs them in with the guilds
// where they have Manage Server (or Administrator, or own it).
func (d *Dashboard) oauthCallback(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if d.cfg.OAuth == nil {
		d.fail(w, r, http.StatusNotFound, "Signing in with Discord is not set up here.")
		return
	}
	clearCookie(w, stateCookie)
	refuse := func(msg string) { d.renderLogin(w, r, http.StatusUnauthorized, msg, "") }
	var st oauthState
	c, err := r.Cookie(stateCookie)
	if err != nil || d.signer.open(stateCookie, c.Value, &st) != nil || d.cfg.Now().Unix() >= st.Expires {
		refuse("Signing in took too long or did not start here: try again.")
		return
	}
	q := r.URL.Query()
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(st.State)) != 1 {
		refuse("Signing in did not start here: try again.")
		return
	}
	if e := q.Get("error"); e != "" || q.Get("code") == "" {
		refuse("Discord did not sign you in.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
	defer cancel()
	ctx = context.WithValue(ctx, oauth2.HTTPClient, d.cfg.OAuth.client())
	cfg := d.cfg.OAuth.config()
	tok, err := cfg.Exchange(ctx, q.Get("code"))
	if err != nil {
		d.log.Warn("discord sign-in: code exchange failed", "err", err)
		refuse("Discord did not sign you in.")
		return
	}
	api := strings.TrimSuffix(cfg.Endpoint.TokenURL, "/oauth2/token") + "/v10"
	hc := cfg.Client(ctx, tok)
	var me struct {
		ID         string `json:"id"`
		Username   string `json:"username"`
		GlobalName string `json:"global_name"`
	}
	if err := getJSON(ctx, hc, api+"/users/@me", &me); err != nil || me.ID == "" {
		d.log.Warn("discord sign-in: reading the user failed", "err", err)
		refuse("Discord did not say who you are.")
		return
	}
	var guilds []struct {
		ID          string `json:"id"`
		Owner       bool   `json:"owner"`
		Permissions string `json:"permissions"`
	}
	if err := getJSON(ctx, hc, api+"/users/@me/guilds?limit=200", &guilds); err != nil {
		d.log.Warn("discord sign-in: reading the user's guilds failed", "err", err)
		refuse("Discord did not list your servers.")
		return
	}
	v := viewer{UserID: me.ID, Name: cmp.Or(me.GlobalName, me.Username), Guilds: []string{},
		Expires: d.cfg.Now().Add(adminTTL).Unix()}
	for _, g := range guilds {
		perms, _ := strconv.ParseInt(g.Permissions, 10, 64)
		if (g.Owner || perms&(permAdministrator|permManageGuild) != 0) && len(v.Guilds) < maxGuilds {
			v.Guilds = append(v.Guilds, g.ID)
		}
	}
	if err := d.setSession(w, v); err != nil {
		d.fail(w, r, http.StatusInternalServerError, "Could not sign you in.")
		return
	}
	d.log.Info("server admin signed in to the dashboard", "user_id", v.UserID, "guilds", len(v.Guilds))
	http.Redirect(w, r, safeNext(st.Next), http.StatusSeeOther)
}

// getJSON GETs a URL of Discord's API into v.
func getJSON(ctx context.Context, hc *http.Client, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", req.URL.Path, resp.Status)
	}
	return json.Unmarshal(body, v)
}
