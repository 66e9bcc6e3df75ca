package config_test

import (
	"strings"
	"testing"

	"github.com/callonbot/callon/config"
)

func TestRolesFileFeatures(t *testing.T) {
	t.Parallel()
	data := `
memory: off
roles:
  - {name: writer, description: writes, prompt: You write., avatar: "https://example.com/w.png"}
guilds:
  "111111111111111111":
    review: on
    channels:
      "222222222222222222":
        personas: on
        memory: on
        review: always
      "333333333333333333":
        roles: [{name: sre, description: runs things, prompt: You run.}]
        personas: true
`
	rf, err := config.ParseRolesFile([]byte(data), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rf.Features {
		s := f.GuildID + "/" + f.ChannelID + ":"
		if f.Personas != nil {
			s += map[bool]string{true: " personas=on", false: " personas=off"}[*f.Personas]
		}
		if f.Memory != nil {
			s += map[bool]string{true: " memory=on", false: " memory=off"}[*f.Memory]
		}
		if f.Review != "" {
			s += " review=" + f.Review
		}
		got = append(got, s)
	}
	want := "/: memory=off|111111111111111111/: review=on|111111111111111111/222222222222222222: personas=on memory=on review=always|" +
		"111111111111111111/333333333333333333: personas=on"
	if strings.Join(got, "|") != want {
		t.Errorf("features = %q\nwant       %q", strings.Join(got, "|"), want)
	}
	// A channel with features only has no roster of its own.
	if n := len(rf.Rosters); n != 2 {
		t.Errorf("got %d rosters, want the default and #333's", n)
	}
	if rf.Rosters[0].Roles[0].Avatar != "https://example.com/w.png" {
		t.Errorf("avatar = %q", rf.Rosters[0].Roles[0].Avatar)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"personas: maybe\nroles: [{name: a, description: d, prompt: p}]\n", `line 1: default roles: personas: "maybe" is neither on nor off`},
		{"guilds:\n  \"1\":\n    channels:\n      \"2\":\n        persona: on\n", `line 5: guilds.1.channels.2: unknown key "persona" (did you mean "personas"?)`},
		{"review: twice\nroles: [{name: a, description: d, prompt: p}]\n", `review: "twice" is not one of on, off, always`},
		{"roles: [{name: a, description: d, prompt: p, avatar: 'http://x/a.png'}]\n", "not an https URL"},
	} {
		if _, err := config.ParseRolesFile([]byte(bad.yaml), func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: err %v, want %q", bad.yaml, err, bad.want)
		}
	}
}
