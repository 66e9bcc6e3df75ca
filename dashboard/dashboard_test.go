package dashboard_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/dashboard"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

const token = "operator-token-0123456789"

// world is a dashboard on a store of its own, behind TLS (its cookies
// are Secure), with a fake Discord for signing admins in.
type world struct {
	t   *testing.T
	ctx context.Context
	st  *store.Store
	dc  *discordtest.Server
	srv *httptest.Server
	d   *dashboard.Dashboard
	a   string // guild ids
	b   string
}

var seq atomic.Int64

func setup(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, ctx: t.Context(), st: storetest.New(t),
		dc: discordtest.New(t, discordtest.WithGuild("Alpha", "general"), discordtest.WithGuild("Beta", "general"))}
	w.a, w.b = w.dc.GuildIDs()[0], w.dc.GuildIDs()[1]
	var d *dashboard.Dashboard
	w.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { d.ServeHTTP(rw, r) }))
	w.srv.StartTLS()
	t.Cleanup(w.srv.Close)
	d = dashboard.New(dashboard.Config{Token: token, Poll: 50 * time.Millisecond,
		OAuth: &dashboard.OAuth{ClientID: w.dc.AppID(), ClientSecret: w.dc.OAuthClientSecret(),
			RedirectURL: w.srv.URL + "/dashboard/auth/callback", DiscordURL: w.dc.URL()}}, w.st, nil)
	w.d = d
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// team starts a team in a guild with a turn whose writer task ended as
// out, and returns it.
func (w *world) team(guild, goal string, out master.Outcome) master.Session {
	w.t.Helper()
	n := seq.Add(1)
	s, err := w.st.StartSession(w.ctx, master.Session{GuildID: guild, ChannelID: "chan-" + guild, ThreadID: fmt.Sprint("thread-", n),
		OwnerID: "owner-1", Goal: goal}, master.DefaultRoles(), "kickoff", "", master.SessionCaps{})
	if err != nil {
		w.t.Fatal(err)
	}
	turn, _, err := w.st.RecordTurn(w.ctx, master.Turn{SessionID: s.ID, MessageID: fmt.Sprint("m", n), GuildID: guild,
		ChannelID: s.ThreadID, AuthorID: "owner-1", Content: "please " + goal}, master.Admission{})
	if err != nil {
		w.t.Fatal(err)
	}
	if ok, err := w.st.AcquireMaster(w.ctx, s.ID, "p1", time.Minute); err != nil || !ok {
		w.t.Fatalf("AcquireMaster = %v, %v", ok, err)
	}
	if _, err := w.st.OpenTurn(w.ctx, s.ID); err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.st.Delegate(w.ctx, master.Guard{SessionID: s.ID, TurnID: turn.ID, Owner: "p1"},
		[]master.NewTask{{Role: "writer", Instruction: "write " + goal}}); err != nil {
		w.t.Fatal(err)
	}
	tasks, err := w.st.ClaimTasks(w.ctx, master.Scope{}, "w1", 1, time.Minute)
	if err != nil || len(tasks) != 1 {
		w.t.Fatalf("ClaimTasks = %v, %v", tasks, err)
	}
	if _, err := w.st.CompleteTask(w.ctx, tasks[0].ID, tasks[0].Attempt, out); err != nil {
		w.t.Fatal(err)
	}
	return s
}

// client is a browser: cookies kept, redirects followed.
func (w *world) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	c := w.srv.Client()
	c.Jar = jar
	return c
}

// get fetches a dashboard path as a browser would (Accept: text/html),
// with an optional bearer token; it returns the status and body.
func get(t *testing.T, c *http.Client, url, bearer string, browser bool) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if browser {
		req.Header.Set("Accept", "text/html,application/xhtml+xml")
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header
}

// Without credentials: 401, the login page for a browser, JSON for a
// program; a wrong bearer token is refused; every answer carries the
// CSP. The right token opens every page.
func TestRefusedWithoutTheToken(t *testing.T) {
	t.Parallel()
	w := setup(t)
	w.team(w.a, "ship the alpha", master.Outcome{State: master.TaskDone, Result: "done"})
	c := w.srv.Client()
	for _, path := range []string{"/dashboard/", "/dashboard/roles", "/dashboard/signals", "/dashboard/teams/1",
		"/dashboard/events", "/dashboard/signals.jsonl", "/dashboard/overview/live", "/dashboard/nowhere"} {
		status, body, h := get(t, c, w.srv.URL+path, "", true)
		if status != http.StatusUnauthorized || !strings.Contains(body, `action="/dashboard/login"`) || strings.Contains(body, "ship the alpha") {
			t.Errorf("browser GET %s = %d, want 401 with the login page and nothing else", path, status)
		}
		if !strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("GET %s has CSP %q", path, h.Get("Content-Security-Policy"))
		}
		status, body, _ = get(t, c, w.srv.URL+path, "", false)
		if status != http.StatusUnauthorized || !strings.Contains(body, `"unauthorized"`) {
			t.Errorf("program GET %s = %d %s, want 401 JSON", path, status, body)
		}
		if status, _, _ = get(t, c, w.srv.URL+path, token+"x", false); status != http.StatusUnauthorized {
			t.Errorf("GET %s with a wrong token = %d, want 401", path, status)
		}
	}
	status, body, h := get(t, c, w.srv.URL+"/dashboard/", token, true)
	if status != http.StatusOK || !strings.Contains(body, "ship the alpha") || strings.Contains(body, "<script>") {
		t.Errorf("GET / with the token = %d, want the overview", status)
	}
	if h.Get("Cache-Control") != "no-store" || h.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers = %v", h)
	}
	status, _, h = get(t, c, w.srv.URL+"/dashboard/static/vendor/htmx.min.js", "", false)
	if status != http.StatusOK || h.Get("Content-Security-Policy") == "" {
		t.Errorf("static file = %d, CSP %q; want 200 with the CSP", status, h.Get("Content-Security-Policy"))
	}
}

// The login form: a wrong token is refused, the right one sets a Secure,
// HttpOnly, SameSite cookie that opens the pages; a cross-site post is
// refused; signing out ends it.
func TestLoginFormAndCookie(t *testing.T) {
	t.Parallel()
	w := setup(t)
	c := w.client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	post := func(tok string, header ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, w.srv.URL+"/dashboard/login",
			strings.NewReader("token="+tok+"&next=%2Fdashboard%2Froles"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("wrong"); resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
		t.Errorf("a wrong token: %d with %d cookies, want 401 and none", resp.StatusCode, len(resp.Cookies()))
	}
	if resp := post(token, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site login = %d, want 403", resp.StatusCode)
	}
	resp := post(token, "Sec-Fetch-Site", "same-origin")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/roles" {
		t.Fatalf("login = %d to %q, want 303 to /dashboard/roles", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 || !cookies[0].Secure || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteLaxMode ||
		cookies[0].Path != "/dashboard/" || strings.Contains(cookies[0].Value, token) {
		t.Fatalf("cookies = %+v, want one Secure, HttpOnly, SameSite cookie without the token", cookies)
	}
	if status, _, _ := get(t, c, w.srv.URL+"/dashboard/roles", "", true); status != http.StatusOK {
		t.Errorf("roles with the cookie = %d, want 200", status)
	}
	// A forged cookie is nobody.
	forged := &http.Cookie{Name: cookies[0].Name, Value: strings.Replace(cookies[0].Value, ".", "x.", 1)}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, w.srv.URL+"/dashboard/", nil)
	req.AddCookie(forged)
	if r, err := w.srv.Client().Do(req); err != nil || r.StatusCode != http.StatusUnauthorized {
		t.Errorf("a forged cookie = %v, %v; want 401", r.StatusCode, err)
	}
	req, _ = http.NewRequestWithContext(t.Context(), http.MethodPost, w.srv.URL+"/dashboard/logout", nil)
	if r, err := c.Do(req); err != nil || r.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout = %v, %v", r, err)
	}
	if status, _, _ := get(t, c, w.srv.URL+"/dashboard/roles", "", true); status != http.StatusUnauthorized {
		t.Errorf("roles after signing out = %d, want 401", status)
	}
}

// signIn signs a Discord user in through OAuth2 and returns their
// browser.
func (w *world) signIn(userID string) *http.Client {
	w.t.Helper()
	w.dc.AuthorizeAs(userID)
	c := w.client()
	status, body, _ := get(w.t, c, w.srv.URL+"/dashboard/auth/discord", "", true)
	if status != http.StatusOK || !strings.Contains(body, "Overview") {
		w.t.Fatalf("signing in ended with %d:\n%s", status, body)
	}
	return c
}

// Parties: an admin of server A (Manage Server there, nothing in B) sees
// A's teams, roles and signals, and nothing of B's, however they ask:
// B's team page, its live part, its event stream, a search naming B or
// B's team, the JSON lines. The operator sees both.
func TestAdminSeesOnlyTheirServer(t *testing.T) {
	t.Parallel()
	w := setup(t)
	alpha := w.team(w.a, "ship the alpha", master.Outcome{State: master.TaskDone, Result: "done"})
	beta := w.team(w.b, "beta secret plan", master.Outcome{State: master.TaskTimeout, Error: "beta-only failure"})
	bob := w.dc.AddUser("bob")
	w.dc.SetMemberRoles(w.a, bob, w.dc.AddRole(w.a, "admins", discordgo.PermissionManageServer))
	c := w.signIn(bob)

	for _, path := range []string{"/dashboard/", "/dashboard/roles", "/dashboard/signals", "/dashboard/overview/live",
		"/dashboard/roles/live", fmt.Sprint("/dashboard/teams/", alpha.ID), "/dashboard/signals.jsonl",
		"/dashboard/signals?guild=" + w.b, fmt.Sprint("/dashboard/signals?team=", beta.ID), "/dashboard/signals.jsonl?guild=" + w.b,
		fmt.Sprint("/dashboard/signals.jsonl?team=", beta.ID)} {
		status, body, _ := get(t, c, w.srv.URL+path, "", true)
		if status != http.StatusOK {
			t.Errorf("bob GET %s = %d, want 200", path, status)
		}
		// (A form echoes what bob asked for: B's id in the query is his own.)
		if strings.Contains(body, "beta") || !strings.Contains(path, w.b) && strings.Contains(body, w.b) ||
			strings.Contains(body, fmt.Sprintf(`"session":%d`, beta.ID)) {
			t.Errorf("bob GET %s shows something of server B:\n%s", path, body)
		}
	}
	if _, body, _ := get(t, c, w.srv.URL+"/dashboard/", "", true); !strings.Contains(body, "ship the alpha") {
		t.Errorf("bob's overview lacks his server's team")
	}
	if _, body, _ := get(t, c, w.srv.URL+"/dashboard/roles", "", true); !strings.Contains(body, "writer") {
		t.Errorf("bob's roles lack his server's writer")
	}
	for _, path := range []string{fmt.Sprint("/dashboard/teams/", beta.ID), fmt.Sprint("/dashboard/teams/", beta.ID, "/live"),
		fmt.Sprint("/dashboard/events?team=", beta.ID), "/dashboard/teams/999999"} {
		status, body, _ := get(t, c, w.srv.URL+path, "", true)
		if status != http.StatusNotFound || strings.Contains(body, "beta") {
			t.Errorf("bob GET %s = %d, want 404 as for a team that does not exist", path, status)
		}
	}
	// The operator sees both servers.
	_, body, _ := get(t, w.srv.Client(), w.srv.URL+"/dashboard/roles", token, true)
	if !strings.Contains(body, "beta-only failure") || !strings.Contains(body, "chan-"+w.a) {
		t.Errorf("the operator's roles lack a server")
	}
	// Someone who manages neither sees neither.
	eve := w.signIn(w.dc.AddUser("eve"))
	if _, body, _ := get(t, eve, w.srv.URL+"/dashboard/", "", true); strings.Contains(body, "alpha") || strings.Contains(body, "beta") {
		t.Errorf("eve, an admin of nothing, sees a team")
	}
}

// The state parameter is checked: a callback that did not start here, or
// whose state differs, signs nobody in.
func TestOAuthStateIsChecked(t *testing.T) {
	t.Parallel()
	w := setup(t)
	c := w.client()
	status, body, _ := get(t, c, w.srv.URL+"/dashboard/auth/callback?code=abc&state=xyz", "", true)
	if status != http.StatusUnauthorized || !strings.Contains(body, "did not start here") {
		t.Errorf("a callback without its cookie = %d, want 401", status)
	}
	// Start for real, but come back with another state.
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(w.srv.URL + "/dashboard/auth/discord")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	status, _, _ = get(t, c, w.srv.URL+"/dashboard/auth/callback?code=abc&state=forged", "", true)
	if status != http.StatusUnauthorized {
		t.Errorf("a forged state = %d, want 401", status)
	}
	if status, _, _ = get(t, c, w.srv.URL+"/dashboard/", "", true); status != http.StatusUnauthorized {
		t.Errorf("after a forged state the dashboard answers %d, want 401", status)
	}
}

// A sign-in's state is used once: the callback deletes its cookie.
func TestOAuthStateCookieGoesWithItsUse(t *testing.T) {
	t.Parallel()
	w := setup(t)
	c := w.signIn(w.dc.AddUser("carol"))
	u, err := url.Parse(w.srv.URL + "/dashboard/auth/callback")
	if err != nil {
		t.Fatal(err)
	}
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "callon_oauth_state" {
			t.Errorf("after signing in the browser still holds the state cookie %q", ck.Value)
		}
	}
}

// Wrong bearer tokens spend their address's budget as the login form's
// do: guessing through the header is limited too, and the operator's
// token from another address still works.
func TestWrongBearerTokensAreLimited(t *testing.T) {
	t.Parallel()
	w := setup(t)
	bearer := func(addr, tok string) int {
		req := httptest.NewRequest(http.MethodGet, "/dashboard/signals.jsonl", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		req.RemoteAddr = addr + ":50000"
		rec := httptest.NewRecorder()
		w.d.ServeHTTP(rec, req)
		return rec.Code
	}
	limited := false
	for range 30 {
		if bearer("203.0.113.10", "guess") == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("30 wrong bearer tokens from one address were all answered 401, want 429 once its budget is spent")
	}
	if code := bearer("198.51.100.8", token); code != http.StatusOK {
		t.Errorf("the operator's token from another address = %d, want 200", code)
	}
}

// Model text is escaped wherever it is shown.
func TestModelTextIsEscaped(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s := w.team(w.a, `<script>alert("goal")</script>`, master.Outcome{State: master.TaskBlocked, Result: `<img src=x onerror=alert(1)>`})
	for _, path := range []string{"/dashboard/", "/dashboard/roles", fmt.Sprint("/dashboard/teams/", s.ID), "/dashboard/signals"} {
		_, body, _ := get(t, w.srv.Client(), w.srv.URL+path, token, true)
		if strings.Contains(body, `<script>alert`) || strings.Contains(body, `<img src=x`) {
			t.Errorf("GET %s shows model text unescaped", path)
		}
	}
}

// The vendored files are the ones the README names.
func TestVendoredChecksums(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("static/vendor/README.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|.*\\| `([0-9a-f]{64})` \\|$").FindAllStringSubmatch(string(readme), -1)
	if len(rows) != 4 {
		t.Fatalf("found %d checksums in the README, want 4", len(rows))
	}
	for _, r := range rows {
		data, err := os.ReadFile("static/vendor/" + r[1])
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != r[2] {
			t.Errorf("%s has checksum %x, the README says %s", r[1], sum, r[2])
		}
	}
}

// The overview's event stream says "changed" when a team starts: the
// poll finds its signals (no NOTIFY of the dashboard's own).
func TestEventStreamSaysChanged(t *testing.T) {
	t.Parallel()
	w := setup(t)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, w.srv.URL+"/dashboard/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := w.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				lines <- string(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	first := <-lines
	if !strings.Contains(first, "connected") {
		t.Fatalf("the stream began with %q", first)
	}
	// The hub reads its cursor on its first poll; a team started after
	// that is news. Start teams until one is heard (each poll is 50 ms).
	deadline := time.After(10 * time.Second)
	for i := 0; ; i++ {
		w.team(w.a, fmt.Sprint("team ", i), master.Outcome{State: master.TaskDone, Result: "ok"})
		select {
		case l := <-lines:
			if !strings.Contains(l, "event: changed") {
				t.Fatalf("the stream said %q, want event: changed", l)
			}
			return
		case <-deadline:
			t.Fatal("no event within 10 s of teams starting")
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// A team with memory shows its channel's notes, read only, escaped.
func TestTeamPageShowsMemory(t *testing.T) {
	t.Parallel()
	w := setup(t)
	s, err := w.st.StartSession(w.ctx, master.Session{GuildID: w.a, ChannelID: "mem-chan", ThreadID: "mem-thread", OwnerID: "o",
		Goal: "remember", Features: master.Features{Memory: true, Review: master.ReviewOn}}, master.DefaultRoles(), "kickoff", "", master.SessionCaps{})
	if err != nil {
		t.Fatal(err)
	}
	turn, _, err := w.st.RecordTurn(w.ctx, master.Turn{SessionID: s.ID, MessageID: "mem-m", GuildID: w.a, ChannelID: s.ThreadID,
		AuthorID: "o", Content: "x"}, master.Admission{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := w.st.AcquireMaster(w.ctx, s.ID, "p1", time.Minute); err != nil || !ok {
		t.Fatalf("AcquireMaster = %v, %v", ok, err)
	}
	if _, err := w.st.OpenTurn(w.ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := w.st.RememberNote(w.ctx, master.Guard{SessionID: s.ID, TurnID: turn.ID, Owner: "p1"},
		master.Note{GuildID: w.a, ChannelID: "mem-chan", Text: `Launch <b onmouseover=alert(1)>March 3</b>`, SessionID: s.ID, TurnID: turn.ID}, 10); err != nil {
		t.Fatal(err)
	}
	_, body, _ := get(t, w.srv.Client(), fmt.Sprint(w.srv.URL, "/dashboard/teams/", s.ID), token, true)
	if !strings.Contains(body, "Channel memory") || !strings.Contains(body, "Launch &lt;b onmouseover=alert(1)&gt;March 3&lt;/b&gt;") ||
		!strings.Contains(body, "review on") {
		t.Errorf("the team page does not show the note, escaped, and the features:\n%s", body)
	}
}

// Wrong tokens spend the sign-in budget of their own address only: a
// stranger guessing cannot keep the operator out of the form.
func TestFailedSignInsCostTheirAddressOnly(t *testing.T) {
	t.Parallel()
	w := setup(t)
	post := func(addr, tok string) int {
		req := httptest.NewRequest(http.MethodPost, "/dashboard/login", strings.NewReader("token="+tok+"&next=%2Fdashboard%2F"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = addr + ":50000"
		rec := httptest.NewRecorder()
		w.d.ServeHTTP(rec, req)
		return rec.Code
	}
	limited := false
	for range 30 {
		if post("203.0.113.9", "guess") == http.StatusTooManyRequests {
			limited = true
			break
		}
	}
	if !limited {
		t.Fatal("30 wrong tokens from one address were all answered 401, want 429 once its budget is spent")
	}
	if code := post("203.0.113.9", token); code != http.StatusTooManyRequests {
		t.Errorf("the right token from the guessing address = %d, want 429 while its budget is spent", code)
	}
	if code := post("198.51.100.7", token); code != http.StatusSeeOther {
		t.Errorf("the operator's sign-in from another address = %d, want 303: a stranger's guesses kept the operator out", code)
	}
}
