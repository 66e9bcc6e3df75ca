package master

import "testing"

func TestResolveFeatures(t *testing.T) {
	t.Parallel()
	on, off := true, false
	always, rOn := ReviewAlways, ReviewOn
	file := map[RoleScope]FeatureSettings{
		{}:                             {Memory: &off},
		{GuildID: "g"}:                 {Review: &rOn},
		{GuildID: "g", ChannelID: "c"}: {Personas: &on},
	}
	configured := []FeatureEntry{
		{Scope: RoleScope{GuildID: "g", ChannelID: "c"}, Settings: FeatureSettings{Review: &always}},
		{Scope: RoleScope{GuildID: "g"}, Settings: FeatureSettings{Memory: &on, Personas: &off}},
	}
	for _, c := range []struct {
		guild, channel string
		want           Features
	}{
		// The channel's command says review always; the guild's command
		// memory on and personas off, which the file's channel's
		// personas on cannot override (commands come first).
		{"g", "c", Features{Personas: false, Memory: true, Review: ReviewAlways}},
		{"g", "other", Features{Personas: false, Memory: true, Review: ReviewOn}},
		{"h", "c", Features{Memory: false, Review: ReviewOff}},
	} {
		got := ResolveFeatures(featureLayers(configured, file, c.guild, c.channel))
		if got != c.want {
			t.Errorf("%s/%s: %+v, want %+v", c.guild, c.channel, got, c.want)
		}
	}
	if got := ResolveFeatures(nil); got != DefaultFeatures() || !got.Memory || got.Personas || got.Review != ReviewOff {
		t.Errorf("defaults = %+v: memory on, the rest off", got)
	}
	if f := (Features{Review: ReviewOn}); !f.Reviews(true) || f.Reviews(false) {
		t.Error("review on reviews merged replies only")
	}
	if f := (Features{Review: ReviewAlways}); !f.Reviews(false) {
		t.Error("review always reviews direct answers")
	}
}
