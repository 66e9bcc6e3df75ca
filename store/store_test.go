package store_test

import (
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
