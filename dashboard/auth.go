package dashboard

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"github.com/callonbot/callon/internal/ratelimit"
	"net/http"
	"slices"
	"strings"
	"time"
)

// viewer is who is looking: the operator (every server), or a server
// admin signed in with Discord (the servers they manage, as Discord said
// when they signed in).
type viewer struct {
	Operator bool     `json:"op,omitempty"`
	UserID   string   `json:"u,omitempty"`
	Name     string   `json:"n,omitempty"`
	Guilds   []string `json:"g,omitempty"`
	Expires  int64    `json:"exp"`
}

// guilds is the guild filter of the viewer's reads: nil (every guild)
// for the operator, else their guilds (an empty, non-nil list when none).
func (v viewer) guilds() []string {
	if v.Operator {
		return nil
	}
	if v.Guilds == nil {
		return []string{}
	}
	return v.Guilds
}

// allows says whether the viewer may see a guild's data.
func (v viewer) allows(guildID string) bool {
	return v.Operator || (guildID != "" && slices.Contains(v.Guilds, guildID))
}

// Cookie names and lifetimes.
const (
	sessionCookie = "callon_dashboard"
	stateCookie   = "callon_oauth_state"
	// operatorTTL and adminTTL bound a sign-in: an admin's servers are
	// what Discord said at sign-in, so they are asked again hourly.
	operatorTTL = 12 * time.Hour
	adminTTL    = time.Hour
	// maxGuilds bounds an admin's guilds kept in the cookie.
	maxGuilds = 100
)

// signer signs and checks the dashboard's cookies with a key derived
// from its secrets: any process of the deployment accepts them, and
// changing a secret signs everyone out.
type signer struct{ key []byte }

func newSigner(secrets ...string) signer {
	h := sha256.New()
	h.Write([]byte("callon dashboard cookie v1"))
	for _, s := range secrets {
		h.Write([]byte{0})
		h.Write([]byte(s))
	}
	return signer{key: h.Sum(nil)}
}

func (s signer) mac(purpose string, payload []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)
}

// sign encodes v for a cookie of the given purpose.
func (s signer) sign(purpose string, v any) (string, error) {
	payload, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	return enc.EncodeToString(payload) + "." + enc.EncodeToString(s.mac(purpose, payload)), nil
}

// open checks a cookie's signature and decodes it into v.
func (s signer) open(purpose, value string, v any) error {
	p, m, ok := strings.Cut(value, ".")
	if !ok {
		return errors.New("malformed")
	}
	enc := base64.RawURLEncoding
	payload, err := enc.DecodeString(p)
	if err != nil {
		return errors.New("malformed")
	}
	mac, err := enc.DecodeString(m)
	if err != nil || !hmac.Equal(mac, s.mac(purpose, payload)) {
		return errors.New("bad signature")
	}
	return json.Unmarshal(payload, v)
}

// tokenEqual compares a presented token with the configured one in
// constant time (their digests, so the length does not leak either).
func tokenEqual(presented, want string) bool {
	if want == "" {
		return false
	}
	a, b := sha256.Sum256([]byte(presented)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// errUnauthorized: no valid credentials; errTooManyAttempts: the
// client's address spent its budget of wrong tokens.
var (
	errUnauthorized    = errors.New("sign in to see the dashboard")
	errTooManyAttempts = errors.New("too many wrong tokens: wait a few seconds and try again")
)

// viewerOf reads the request's credentials: a bearer token (the
// operator's; a wrong one is refused, never passed on to the cookie), or
// the session cookie.
func (d *Dashboard) viewerOf(r *http.Request) (viewer, error) {
	now := d.cfg.Now()
	if h := r.Header.Get("Authorization"); h != "" {
		// A bearer token is a guess like the login form's: wrong ones
		// spend the client address's budget, and a spent budget is
		// refused before the token is compared.
		addr := ratelimit.ClientAddr(r)
		if d.login.Exhausted(addr) {
			return viewer{}, errTooManyAttempts
		}
		scheme, tok, _ := strings.Cut(h, " ")
		if !strings.EqualFold(scheme, "Bearer") || !tokenEqual(strings.TrimSpace(tok), d.cfg.Token) {
			d.login.Allow(addr)
			return viewer{}, errUnauthorized
		}
		// Checked again on every request; an event stream ends at streamMax.
		return viewer{Operator: true, Expires: now.Add(streamMax).Unix()}, nil
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return viewer{}, errUnauthorized
	}
	var v viewer
	if err := d.signer.open(sessionCookie, c.Value, &v); err != nil || now.Unix() >= v.Expires {
		return viewer{}, errUnauthorized
	}
	if v.Operator && d.cfg.Token == "" || !v.Operator && d.cfg.OAuth == nil {
		return viewer{}, errUnauthorized // that way of signing in was turned off
	}
	return v, nil
}

// setSession signs v in.
func (d *Dashboard) setSession(w http.ResponseWriter, v viewer) error {
	value, err := d.signer.sign(sessionCookie, v)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: value, Path: "/dashboard/",
		Expires: time.Unix(v.Expires, 0), MaxAge: int(time.Until(time.Unix(v.Expires, 0)).Seconds()),
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	return nil
}

// clearCookie removes a cookie of the dashboard's.
func clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/dashboard/", MaxAge: -1,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

// wantsPage says whether an unauthenticated request came from a browser
// navigating (it gets the login page), not from a program or a script
// (they get 401 alone).
func wantsPage(r *http.Request) bool {
	return r.Method == http.MethodGet && r.Header.Get("HX-Request") == "" &&
		strings.Contains(r.Header.Get("Accept"), "text/html")
}

// safeNext is where to go after signing in: a dashboard path, never
// another site.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/dashboard/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") ||
		strings.HasPrefix(next, "/dashboard/login") || strings.HasPrefix(next, "/dashboard/auth/") {
		return "/dashboard/"
	}
	return next
}
