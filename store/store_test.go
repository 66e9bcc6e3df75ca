package store_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/callonbot/callon/store"
	"github.com/callonbot/callon/store/storetest"
)

func TestOpenNeverLeaksPassword(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-Pa55word"
	good := storetest.URL(t)
	u, err := url.Parse(good)
	if err != nil {
		t.Fatal(err)
	}
	withPassword := func(mod func(*url.URL)) string {
		c := *u
		c.User = url.UserPassword(u.User.Username(), secret)
		mod(&c)
		return c.String()
	}
	for _, tc := range []struct{ name, url string }{
		{"missing database", withPassword(func(u *url.URL) { u.Path = "/callon_no_such_database" })},
		{"nobody listening", withPassword(func(u *url.URL) { u.Host = "127.0.0.1:1" })},
		{"malformed port", "postgres://postgres:" + secret + "@127.0.0.1:notaport/db"},
		{"bad option", withPassword(func(u *url.URL) { u.RawQuery = "sslmode=bogus" })},
		{"keyword form", "host=127.0.0.1 port=1 user=postgres password=" + secret + " dbname=x connect_timeout=5"},
		{"keyword form malformed", "host=127.0.0.1 password='" + secret + " dbname=x"},
	} {
		s, err := store.Open(t.Context(), tc.url, nil)
		if err == nil {
			s.Close()
			t.Errorf("%s: got nil error, want one", tc.name)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: got error %q, want one without the password", tc.name, err)
		}
		if _, err := store.Migrate(t.Context(), tc.url); err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("%s: Migrate: got error %v, want one without the password", tc.name, err)
		}
	}
}

func TestOpenPings(t *testing.T) {
	t.Parallel()
	s, err := store.Open(t.Context(), storetest.URL(t), nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

// Only the password is masked: a user or database name equal to it shows
// as it is, since the error names them anyway, in every form.
func TestOpenErrorKeepsNamesEqualToThePassword(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(storetest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	host, port := u.Hostname(), u.Port()
	for _, tc := range []struct{ name, url, shown string }{
		{"database in a url", "postgres://" + u.User.Username() + ":callon_nodb_7@" + u.Host + "/callon_nodb_7?sslmode=disable", "callon_nodb_7"},
		{"database in ?password=", "postgres://" + u.User.Username() + "@" + u.Host + "/callon_nodb_8?sslmode=disable&password=callon_nodb_8", "callon_nodb_8"},
		{"user in a url", "postgres://callon_ghost_9:callon_ghost_9@" + u.Host + "/postgres?sslmode=disable", "callon_ghost_9"},
		{"database in keyword form", "host=" + host + " port=" + port + " user=" + u.User.Username() +
			" password='callon_nodb_10' dbname=callon_nodb_10 sslmode=disable", "callon_nodb_10"},
	} {
		s, err := store.Open(t.Context(), tc.url, nil)
		if err == nil {
			s.Close()
			t.Errorf("%s: got nil error, want one", tc.name)
			continue
		}
		if !strings.Contains(err.Error(), tc.shown) || strings.Contains(err.Error(), "xxxxx") {
			t.Errorf("%s: got error %q, want it to name %s unmasked", tc.name, err, tc.shown)
		}
	}
}

func TestRedactMasksOnlyThePassword(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, dsn, msg, want string }{
		{"bare password", "postgres://bob:s3cret@db/app", "auth s3cret refused for user=bob (s3crets differ)",
			"auth xxxxx refused for user=bob (s3crets differ)"},
		{"password equal to the user", "postgres://alice:alice@db/app", "failed to connect to `user=alice database=app`: password=alice rejected; role \"alice\"",
			"failed to connect to `user=alice database=app`: password=xxxxx rejected; role \"alice\""},
		{"keyword form", "host=db user=app password='pa ss' dbname=app", "dial with password='pa ss' as app",
			"dial with password='xxxxx' as app"},
	} {
		if got := store.Redact(errors.New(tc.msg), tc.dsn).Error(); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
