package discordtest_test

import (
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/bot/discordtest"
)

func locs(kv ...string) *map[discordgo.Locale]string {
	m := map[discordgo.Locale]string{}
	for i := 0; i < len(kv); i += 2 {
		m[discordgo.Locale(kv[i])] = kv[i+1]
	}
	return &m
}

// localizedAsk is askCommand in German and Latin American Spanish.
func localizedAsk() *discordgo.ApplicationCommand {
	return &discordgo.ApplicationCommand{
		Name:                     "ask",
		NameLocalizations:        locs("de", "frage", "es-419", "preguntar"),
		Description:              "Ask a question",
		DescriptionLocalizations: locs("de", "Stelle eine Frage", "es-419", "Haz una pregunta"),
		Options: []*discordgo.ApplicationCommandOption{{
			Type: discordgo.ApplicationCommandOptionString, Name: "question", Description: "What to ask", Required: true,
			NameLocalizations:        map[discordgo.Locale]string{"de": "frage"},
			DescriptionLocalizations: map[discordgo.Locale]string{"de": "Was du fragen willst"},
			Choices: []*discordgo.ApplicationCommandOptionChoice{{
				Name: "why", Value: "why", NameLocalizations: map[discordgo.Locale]string{"de": "warum", "zh-TW": "為什麼"},
			}},
		}},
	}
}

func TestCommandLocalizations(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s, err := bot.NewSession(dc.Token(), dc.URL(), allIntents) // REST only
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ApplicationCommandBulkOverwrite(dc.AppID(), dc.GuildID(), []*discordgo.ApplicationCommand{localizedAsk()}); err != nil {
		t.Fatalf("register: %v", err)
	}
	got := dc.Commands(dc.GuildID())[0]
	if (*got.NameLocalizations)["es-419"] != "preguntar" || got.Options[0].NameLocalizations["de"] != "frage" ||
		got.Options[0].Choices[0].NameLocalizations["zh-TW"] != "為什麼" {
		t.Errorf("got %+v, want the localizations kept", got)
	}

	for name, tc := range map[string]struct {
		edit func(*discordgo.ApplicationCommand)
		want string
	}{
		"unknown locale":  {func(c *discordgo.ApplicationCommand) { c.NameLocalizations = locs("xx", "frage") }, `"xx"`},
		"regional german": {func(c *discordgo.ApplicationCommand) { c.NameLocalizations = locs("de-DE", "frage") }, "de-DE"},
		"uppercase name":  {func(c *discordgo.ApplicationCommand) { c.NameLocalizations = locs("de", "Frage") }, "name_localizations"},
		"name with space": {func(c *discordgo.ApplicationCommand) { c.NameLocalizations = locs("fr", "poser question") }, "name_localizations"},
		"long description": {func(c *discordgo.ApplicationCommand) {
			c.DescriptionLocalizations = locs("fr", strings.Repeat("d", 101))
		}, "description_localizations"},
		"empty description": {func(c *discordgo.ApplicationCommand) { c.DescriptionLocalizations = locs("ja", "") }, "description_localizations"},
		"option name": {func(c *discordgo.ApplicationCommand) {
			c.Options[0].NameLocalizations = map[discordgo.Locale]string{"ko": "질문 하기"}
		}, "options"},
		"choice name": {func(c *discordgo.ApplicationCommand) {
			c.Options[0].Choices[0].NameLocalizations = map[discordgo.Locale]string{"de": strings.Repeat("w", 101)}
		}, "choices"},
	} {
		cmd := localizedAsk()
		tc.edit(cmd)
		_, err := s.ApplicationCommandBulkOverwrite(dc.AppID(), dc.GuildID(), []*discordgo.ApplicationCommand{cmd})
		if restCode(err) != 50035 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want 50035 naming %s", name, err, tc.want)
		}
	}
	menu := &discordgo.ApplicationCommand{Name: "Summarize", Type: discordgo.MessageApplicationCommand, NameLocalizations: locs("de", "Zusammenfassen")}
	if _, err := s.ApplicationCommandBulkOverwrite(dc.AppID(), "", []*discordgo.ApplicationCommand{menu}); err != nil {
		t.Errorf("a context menu with capitals in its localized name: %v", err)
	}
	menu.DescriptionLocalizations = locs("de", "x")
	if _, err := s.ApplicationCommandBulkOverwrite(dc.AppID(), "", []*discordgo.ApplicationCommand{menu}); restCode(err) != 50035 {
		t.Errorf("a context menu with a localized description: got %v, want 50035", err)
	}
}

func TestInteractionsCarryLocales(t *testing.T) {
	t.Parallel()
	dc, s, got, sent := clickSetup(t)
	registerGuild(t, s, dc, localizedAsk())
	guildLocale := func(i *discordgo.Interaction) string {
		if i.GuildLocale == nil {
			return ""
		}
		return string(*i.GuildLocale)
	}

	ix := dc.SlashCommand(t, discordtest.SlashCommand{Name: "ask", Locale: "de", GuildLocale: "fr",
		Options: []discordtest.CommandOption{discordtest.StringOption("question", "why")}})
	i := next(t, got)
	if i.Locale != "de" || guildLocale(i) != "fr" {
		t.Errorf("got locale %q and guild locale %q, want de and fr", i.Locale, guildLocale(i))
	}
	if err := s.InteractionRespond(i, feedbackModal()); err != nil {
		t.Fatal(err)
	}
	dc.SubmitModal(t, ix, map[string]string{"title": "wieso"})
	if j := next(t, got); j.Locale != "de" || guildLocale(j) != "fr" {
		t.Errorf("submission: got %q and %q, want the locales of the command", j.Locale, guildLocale(j))
	}

	dc.ClickButton(t, discordtest.ClickButton{MessageID: sent.ID, CustomID: "approve"})
	if k := next(t, got); k.Locale != "en-US" || guildLocale(k) != "en-US" {
		t.Errorf("click: got %q and %q, want en-US by default", k.Locale, guildLocale(k))
	}
	click := dc.ClickButton(t, discordtest.ClickButton{MessageID: sent.ID, CustomID: "deny", Locale: "ja", GuildLocale: "ko"})
	k := next(t, got)
	if k.Locale != "ja" || guildLocale(k) != "ko" {
		t.Errorf("click: got %q and %q, want ja and ko", k.Locale, guildLocale(k))
	}
	if err := s.InteractionRespond(k, feedbackModal()); err != nil {
		t.Fatal(err)
	}
	dc.SubmitModal(t, click, map[string]string{"title": "なぜですか"}, discordtest.SubmitLocale("zh-CN", ""))
	if l := next(t, got); l.Locale != "zh-CN" || guildLocale(l) != "ko" {
		t.Errorf("submission: got %q and %q, want zh-CN and the click's ko", l.Locale, guildLocale(l))
	}

	ft := &fatalRecorder{TB: t}
	if ix := dc.SlashCommand(ft, discordtest.SlashCommand{Name: "ask", Locale: "german",
		Options: []discordtest.CommandOption{discordtest.StringOption("question", "q")}}); ix != nil || ft.msg == "" {
		t.Error("an unknown locale was dispatched")
	}
}
