package bot

import (
	"testing"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// Every command and every option has its description in French, within
// Discord's 100 characters, and no translation names a path that is not
// a command or an option.
func TestLocalizations(t *testing.T) {
	t.Parallel()
	used := map[string]bool{}
	var check func(path string, loc map[discordgo.Locale]string)
	check = func(path string, loc map[discordgo.Locale]string) {
		used[path] = true
		fr, ok := loc[discordgo.French]
		switch {
		case !ok:
			t.Errorf("%s has no French description", path)
		case utf8.RuneCountInString(fr) > 100:
			t.Errorf("%s: the French description has %d characters, more than Discord's 100", path, utf8.RuneCountInString(fr))
		}
	}
	var walk func(path string, opts []*discordgo.ApplicationCommandOption)
	walk = func(path string, opts []*discordgo.ApplicationCommandOption) {
		for _, o := range opts {
			p := path + "." + o.Name
			check(p, o.DescriptionLocalizations)
			walk(p, o.Options)
			for _, c := range o.Choices {
				used["choice."+c.Name] = true
				if c.NameLocalizations[discordgo.French] == "" {
					t.Errorf("%s: choice %q has no French name", p, c.Name)
				}
			}
		}
	}
	for _, c := range commandDefinitions() {
		if c.DescriptionLocalizations == nil {
			t.Errorf("/%s has no localized description", c.Name)
			continue
		}
		check(c.Name, *c.DescriptionLocalizations)
		walk(c.Name, c.Options)
	}
	for path := range descriptions[discordgo.French] {
		if !used[path] {
			t.Errorf("the French description of %q names no command, option or choice", path)
		}
	}
	// The definitions themselves stay untranslated.
	if commands[0].def.DescriptionLocalizations != nil {
		t.Error("localize changed the registry's definitions")
	}
}
