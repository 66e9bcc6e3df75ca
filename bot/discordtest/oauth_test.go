package discordtest_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/bwmarrin/discordgo"
	"golang.org/x/oauth2"

	"github.com/callonbot/callon/bot/discordtest"
)

// A web app signs a user in with the authorization code grant and reads
// their guilds with their permissions: Manage Server where a role gives
// it, everything where they own the guild.
func TestOAuth2CodeGrantAndGuilds(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t, discordtest.WithGuild("A", "general"), discordtest.WithGuild("B", "general"))
	a, b := dc.GuildIDs()[0], dc.GuildIDs()[1]
	bob := dc.AddUser("bob")
	dc.SetMemberRoles(a, bob, dc.AddRole(a, "admins", discordgo.PermissionManageServer))
	cfg := &oauth2.Config{ClientID: dc.AppID(), ClientSecret: dc.OAuthClientSecret(), RedirectURL: "https://app.example/callback",
		Scopes: []string{"identify", "guilds"},
		Endpoint: oauth2.Endpoint{AuthURL: dc.URL() + "/oauth2/authorize", TokenURL: dc.URL() + "/api/oauth2/token",
			AuthStyle: oauth2.AuthStyleInHeader}}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	authorize := func(user string) string {
		t.Helper()
		dc.AuthorizeAs(user)
		resp, err := noRedirect.Get(cfg.AuthCodeURL("st4te"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusFound || loc.Host != "app.example" || loc.Query().Get("state") != "st4te" || loc.Query().Get("code") == "" {
			t.Fatalf("authorize answered %d to %s, want a redirect with the code and state", resp.StatusCode, loc)
		}
		return loc.Query().Get("code")
	}
	guilds := func(code string) map[string]int64 {
		t.Helper()
		tok, err := cfg.Exchange(t.Context(), code)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := cfg.Client(t.Context(), tok).Get(dc.URL() + "/api/v10/users/@me/guilds")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var gs []struct {
			ID, Permissions string
			Owner           bool
		}
		if err := json.NewDecoder(resp.Body).Decode(&gs); err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, g := range gs {
			out[g.ID], _ = strconv.ParseInt(g.Permissions, 10, 64)
		}
		return out
	}

	code := authorize(bob)
	perms := guilds(code)
	if perms[a]&discordgo.PermissionManageServer == 0 || perms[b]&discordgo.PermissionManageServer != 0 {
		t.Errorf("bob's permissions = %v, want Manage Server in A only", perms)
	}
	if _, err := cfg.Exchange(t.Context(), code); err == nil {
		t.Error("a code was exchanged twice")
	}
	bad := *cfg
	bad.ClientSecret = "wrong"
	if _, err := bad.Exchange(t.Context(), authorize(bob)); err == nil {
		t.Error("a wrong client secret got a token")
	}
	owner := guilds(authorize(""))
	if owner[a] != discordgo.PermissionAll || owner[b] != discordgo.PermissionAll {
		t.Errorf("the owner's permissions = %v, want all in both", owner)
	}
	resp, err := http.Get(dc.URL() + "/api/v10/users/@me/guilds")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("guilds without a token = %d, want 401", resp.StatusCode)
	}
}
