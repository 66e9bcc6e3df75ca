package dashboard

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/time/rate"

	"github.com/callonbot/callon/internal/ratelimit"
	"github.com/callonbot/callon/master"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config sets up the dashboard. Token or OAuth must be set: with neither
// nobody could sign in, and cmd/callon does not mount it.
type Config struct {
	// Token is the operator's CALLON_DASHBOARD_TOKEN ("" turns the
	// operator's sign-in off).
	Token string
	// OAuth, when set, lets server admins sign in with Discord.
	OAuth *OAuth
	// Prices turn tokens into cost where a model has one; DailyBudget is
	// the deployment's daily tokens per guild (0: none), shown against
	// each guild's use unless the guild set its own.
	Prices      master.Prices
	DailyBudget int64
	// Wake delivers the store's wake-ups (session ids, or "*"); the live
	// updates ride them, with a poll every Poll (default 2 s) while
	// someone watches.
	Wake <-chan string
	Poll time.Duration
	// GuildName names a guild for people, "" when unknown (the bot's
	// cache); nil shows ids.
	GuildName func(guildID string) string
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// Dashboard serves /dashboard/. Run keeps its live updates going.
type Dashboard struct {
	cfg    Config
	store  Store
	log    *slog.Logger
	signer signer
	pages  map[string]*template.Template
	static http.Handler
	hub    *hub
	login  *ratelimit.PerAddr // failed sign-ins, per client address
	mux    *http.ServeMux
}

// New returns the dashboard.
func New(cfg Config, st Store, log *slog.Logger) *Dashboard {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	secret := ""
	if cfg.OAuth != nil {
		secret = cfg.OAuth.ClientSecret
	}
	sub, _ := fs.Sub(staticFS, "static")
	d := &Dashboard{
		cfg:    cfg,
		store:  st,
		log:    log.With("component", "dashboard"),
		signer: newSigner(cfg.Token, secret),
		pages:  parsePages(),
		static: http.StripPrefix("/dashboard/static/", http.FileServerFS(sub)),
		hub:    newHub(st, cfg.Poll),
		login:  ratelimit.NewPerAddr(rate.Every(time.Second), 10),
	}
	d.mux = d.routes()
	return d
}

// Run keeps the live updates going until ctx ends.
func (d *Dashboard) Run(ctx context.Context) error {
	return d.hub.run(ctx, d.cfg.Wake, d.log)
}

// csp is the Content-Security-Policy of every response: the dashboard's
// own scripts, styles and connections only, no inline script or style,
// no frames, forms posting only to itself.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP serves everything under /dashboard/: headers first, then
// the cross-origin check on unsafe methods (the sign-in and sign-out
// forms), then the route.
func (d *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	crossOrigin.Handler(d.mux).ServeHTTP(w, r)
}

// crossOrigin refuses cross-site POSTs (Sec-Fetch-Site, else Origin
// against Host): a login form cannot be posted from another site.
var crossOrigin = http.NewCrossOriginProtection()

func (d *Dashboard) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /dashboard", http.RedirectHandler("/dashboard/", http.StatusMovedPermanently))
	mux.Handle("GET /dashboard/static/", d.static)
	mux.HandleFunc("GET /dashboard/login", d.loginPage)
	mux.HandleFunc("POST /dashboard/login", d.loginSubmit)
	mux.HandleFunc("POST /dashboard/logout", d.logout)
	mux.HandleFunc("GET /dashboard/auth/discord", d.oauthStart)
	mux.HandleFunc("GET /dashboard/auth/callback", d.oauthCallback)
	overview, overviewLive := views(d, "overview", "overview", d.overviewData, func([]guildView) string { return "Overview" })
	team, teamLive := views(d, "team", "", d.teamData, func(tv *teamView) string { return "Team: " + master.Truncate(tv.Session.Goal, 60) })
	roles, rolesLive := views(d, "roles", "roles", d.rolesData, func(rolesView) string { return "Roles" })
	mux.HandleFunc("GET /dashboard/{$}", d.authed(overview))
	mux.HandleFunc("GET /dashboard/overview/live", d.authed(overviewLive))
	mux.HandleFunc("GET /dashboard/teams/{id}", d.authed(team))
	mux.HandleFunc("GET /dashboard/teams/{id}/live", d.authed(teamLive))
	mux.HandleFunc("GET /dashboard/roles", d.authed(roles))
	mux.HandleFunc("GET /dashboard/roles/live", d.authed(rolesLive))
	mux.HandleFunc("GET /dashboard/signals", d.authed(d.signals))
	mux.HandleFunc("GET /dashboard/signals.jsonl", d.authed(d.signalsJSON))
	mux.HandleFunc("GET /dashboard/events", d.authed(d.events))
	mux.HandleFunc("/dashboard/", d.authed(func(w http.ResponseWriter, r *http.Request, _ viewer) {
		d.fail(w, r, http.StatusNotFound, "There is no such page.")
	}))
	return mux
}

// authed runs h for a signed-in viewer; anyone else gets 401: the login
// page when a browser navigates, nothing more otherwise.
func (d *Dashboard) authed(h func(http.ResponseWriter, *http.Request, viewer)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		v, err := d.viewerOf(r)
		if errors.Is(err, errTooManyAttempts) {
			writeError(w, http.StatusTooManyRequests, "too_many_attempts", err.Error())
			return
		}
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="callon dashboard"`)
			if wantsPage(r) {
				d.renderLogin(w, r, http.StatusUnauthorized, "", r.URL.RequestURI())
				return
			}
			writeError(w, http.StatusUnauthorized, "unauthorized", errUnauthorized.Error())
			return
		}
		h(w, r, v)
	}
}

// writeError answers a program: {"error": {"code", "message"}}, as the
// inbound API does.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

// fail answers an error to a signed-in viewer: a page for a browser, JSON
// for a program.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if !wantsPage(r) {
		writeError(w, status, http.StatusText(status), msg)
		return
	}
	d.render(w, status, "error", page{Title: http.StatusText(status), Data: msg})
}

// loginPage shows the sign-in form (and the Discord button when OAuth is
// set up).
func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	d.renderLogin(w, r, http.StatusOK, "", r.URL.Query().Get("next"))
}

// loginSubmit checks the operator's token (constant time; failures are
// rate limited per client address, so that nobody's wrong guesses keep
// the operator out) and signs the operator in.
func (d *Dashboard) loginSubmit(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if err := r.ParseForm(); err != nil {
		d.renderLogin(w, r, http.StatusBadRequest, "That form could not be read.", "")
		return
	}
	next := r.PostForm.Get("next")
	addr := ratelimit.ClientAddr(r)
	if d.login.Exhausted(addr) {
		d.renderLogin(w, r, http.StatusTooManyRequests, "Too many attempts: wait a few seconds and try again.", next)
		return
	}
	if !tokenEqual(r.PostForm.Get("token"), d.cfg.Token) {
		d.login.Allow(addr) // only failures spend the budget
		d.renderLogin(w, r, http.StatusUnauthorized, "That token is not the dashboard's.", next)
		return
	}
	v := viewer{Operator: true, Name: "operator", Expires: d.cfg.Now().Add(operatorTTL).Unix()}
	if err := d.setSession(w, v); err != nil {
		d.fail(w, r, http.StatusInternalServerError, "Could not sign you in.")
		return
	}
	http.Redirect(w, r, safeNext(next), http.StatusSeeOther)
}

// logout signs out.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	clearCookie(w, sessionCookie)
	http.Redirect(w, r, "/dashboard/login", http.StatusSeeOther)
}

func (d *Dashboard) renderLogin(w http.ResponseWriter, r *http.Request, status int, problem, next string) {
	d.render(w, status, "login", page{Title: "Sign in", Data: loginData{
		Problem: problem, Next: safeNext(next), Token: d.cfg.Token != "", Discord: d.cfg.OAuth != nil,
	}})
}

// loginData is what the sign-in page shows.
type loginData struct {
	Problem string
	Next    string
	Token   bool // the operator's token is accepted
	Discord bool // server admins may sign in with Discord
}
