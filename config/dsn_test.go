package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/callonbot/callon/config"
)

// Every form pgx accepts has its password masked, and nothing else: a
// user or database name equal to the password stays.
func TestRedactURLEveryForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, dsn, want string }{
		{"url userinfo", "postgres://callon:pw-1@db:5432/callon?sslmode=disable",
			"postgres://callon:xxxxx@db:5432/callon?sslmode=disable"},
		{"postgresql scheme", "postgresql://callon:pw-1@db/callon", "postgresql://callon:xxxxx@db/callon"},
		{"url without password", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
			"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"},
		{"url query password", "postgres://callon@db/callon?sslmode=disable&password=pw-1",
			"postgres://callon@db/callon?sslmode=disable&password=xxxxx"},
		{"url query sslpassword and escaped key", "postgres://db/callon?ssl%70assword=pw-1&application_name=x",
			"postgres://db/callon?ssl%70assword=xxxxx&application_name=x"},
		{"url multi-host", "postgres://callon:pw-1@h1:5432,h2:5432/callon", "postgres://callon:xxxxx@h1:5432,h2:5432/callon"},
		{"url '@' in the password", "postgres://callon:p@w-1@db/callon", "postgres://callon:xxxxx@db/callon"},
		{"url names equal to the password", "postgres://pw-1:pw-1@db/pw-1?password=pw-1&user=pw-1",
			"postgres://pw-1:xxxxx@db/pw-1?password=xxxxx&user=pw-1"},
		{"keyword plain", "host=db user=callon password=pw-1 dbname=callon", "host=db user=callon password=xxxxx dbname=callon"},
		{"keyword spaces around =", "host=db password = pw-1 dbname=callon", "host=db password = xxxxx dbname=callon"},
		{"keyword quoted", `host=db password='p w\'1' dbname=callon`, "host=db password=xxxxx dbname=callon"},
		{"keyword escaped space", `password=p\ w sslmode=disable`, "password=xxxxx sslmode=disable"},
		{"keyword sslpassword", "host=db sslpassword=pw-1", "host=db sslpassword=xxxxx"},
		{"keyword names equal to the password", "user=pw-1 password=pw-1 dbname=pw-1", "user=pw-1 password=xxxxx dbname=pw-1"},
		{"keyword unterminated quote", "host=db password='pw-1 dbname=x", "(unparseable, redacted)"},
		{"keyword without =", "host=db pw-1", "(unparseable, redacted)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := config.RedactURL(tc.dsn); got != tc.want {
				t.Errorf("%s: RedactURL(%q) = %q, want %q", tc.name, tc.dsn, got, tc.want)
			}
		})
	}
}

// The configuration accepts every form and never prints the password,
// in String, in structured logs or in Validate's errors.
func TestDatabasePasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{
		"postgres://callon:Sekr1t-pw@db:5432/callon",
		"postgres://callon@db:5432/callon?password=Sekr1t-pw",
		"postgres://callon@db:5432/callon?sslpassword=Sekr1t-pw",
		"host=db user=callon password=Sekr1t-pw dbname=callon",
		"host=db user=callon password='Sekr1t-pw' dbname=callon",
	} {
		c := config.Load(env(map[string]string{"DATABASE_URL": dsn}))
		if err := c.Validate(0); err != nil {
			t.Errorf("%s: Validate() = %v, want nil", config.RedactURL(dsn), err)
		}
		for _, s := range []string{c.String(), fmt.Sprint(c), fmt.Sprintf("%+v", c.LogValue())} {
			if strings.Contains(s, "Sekr1t-pw") {
				t.Errorf("printed config leaks the password:\n%s", s)
			}
			if !strings.Contains(s, "callon") {
				t.Errorf("printed config lost the user and database names:\n%s", s)
			}
		}
	}
	bad := config.Load(env(map[string]string{"DATABASE_URL": "host=db password='Sekr1t-pw"}))
	err := bad.Validate(0)
	if err == nil || !strings.Contains(err.Error(), "DATABASE_URL:") || strings.Contains(err.Error()+bad.String(), "Sekr1t-pw") {
		t.Errorf("malformed keyword string: Validate() = %v, String() = %s; want an error naming DATABASE_URL, no password", err, bad)
	}
}
