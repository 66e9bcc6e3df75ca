package discordtest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
)

var askCommand = &discordgo.ApplicationCommand{
	Name:        "ask",
	Description: "Ask a question",
	Options: []*discordgo.ApplicationCommandOption{
		{Type: discordgo.ApplicationCommandOptionString, Name: "question", Description: "What to ask", Required: true, Autocomplete: true},
		{Type: discordgo.ApplicationCommandOptionInteger, Name: "depth", Description: "How deep"},
	},
}

// interactions delivers the interactions a session's handler receives.
func interactions(s *discordgo.Session) <-chan *discordgo.Interaction {
	ch := make(chan *discordgo.Interaction, 16)
	s.AddHandler(func(_ *discordgo.Session, ic *discordgo.InteractionCreate) { ch <- ic.Interaction })
	return ch
}

func next(t *testing.T, ch <-chan *discordgo.Interaction) *discordgo.Interaction {
	t.Helper()
	select {
	case i := <-ch:
		return i
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for an interaction")
		return nil
	}
}

func TestDeferEditAndFollowUp(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	registerGuild(t, s, dc, askCommand)
	in := watchMessages(s)
	got := interactions(s)
	general := dc.ChannelID("general")

	ix := dc.SlashCommand(t, discordtest.SlashCommand{
		Name:        "ask",
		ChannelID:   general,
		Permissions: discordgo.PermissionAdministrator,
		Options:     []discordtest.CommandOption{discordtest.StringOption("question", "why?"), discordtest.IntegerOption("depth", 2)},
	})
	i := next(t, got)
	data := i.ApplicationCommandData()
	if i.ID != ix.ID || i.Token != ix.Token || i.Member.User.ID != dc.UserID() || i.Member.Permissions != discordgo.PermissionAdministrator {
		t.Errorf("got interaction %+v, want the dispatched one by the default user with admin permissions", i)
	}
	if data.Name != "ask" || data.GetOption("question").StringValue() != "why?" || data.GetOption("depth").IntValue() != 2 {
		t.Errorf("got data %+v, want ask why? depth 2", data)
	}
	if data.ID != dc.Commands(dc.GuildID())[0].ID {
		t.Errorf("got command id %s, want the registered one", data.ID)
	}

	if err := s.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}); err != nil {
		t.Fatalf("defer: %v", err)
	}
	content := "because"
	edited, err := s.InteractionResponseEdit(i, &discordgo.WebhookEdit{Content: &content})
	if err != nil {
		t.Fatalf("edit original: %v", err)
	}
	follow, err := s.FollowupMessageCreate(i, true, &discordgo.WebhookParams{Content: "one more thing"})
	if err != nil {
		t.Fatalf("follow-up: %v", err)
	}

	rs := ix.WaitResponses(t, 3)
	if rs[0].Kind != discordtest.ResponseCallback || rs[0].Type != discordgo.InteractionResponseDeferredChannelMessageWithSource ||
		rs[1].Kind != discordtest.ResponseEditOriginal || rs[1].Content != "because" || rs[1].MessageID != edited.ID ||
		rs[2].Kind != discordtest.ResponseFollowup || rs[2].MessageID != follow.ID {
		t.Errorf("got responses %+v, want defer, edit original, follow-up", rs)
	}
	orig, ok := ix.Original()
	if !ok || orig.Content != "because" || orig.Flags&discordgo.MessageFlagsLoading != 0 || orig.InteractionID != ix.ID {
		t.Errorf("got original %+v, want the edited, no longer loading answer", orig)
	}
	msgs := dc.Messages(general)
	if len(msgs) != 2 || msgs[0].ID != edited.ID || msgs[1].Content != "one more thing" {
		t.Errorf("got channel messages %+v, want the original and the follow-up", msgs)
	}
	dc.WaitFor(t, func() bool { return len(in.find(follow.ID)) == 1 }, "the follow-up's MESSAGE_CREATE echo")
	if echo := in.find(follow.ID)[0]; !echo.Author.Bot || echo.Author.ID != dc.BotUserID() || echo.Type != discordgo.MessageTypeChatInputCommand {
		t.Errorf("got echo %+v, want a command reply by the bot", echo)
	}
}

func TestFirstFollowUpReplacesDeferral(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	registerGuild(t, s, dc, askCommand)
	got := interactions(s)

	ix := dc.SlashCommand(t, discordtest.SlashCommand{Name: "ask", Options: []discordtest.CommandOption{discordtest.StringOption("question", "q")}})
	i := next(t, got)
	err := s.InteractionRespond(i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral},
	})
	if err != nil {
		t.Fatalf("defer: %v", err)
	}
	first, err := s.FollowupMessageCreate(i, true, &discordgo.WebhookParams{Content: "first"})
	if err != nil {
		t.Fatalf("first follow-up: %v", err)
	}
	second, err := s.FollowupMessageCreate(i, true, &discordgo.WebhookParams{Content: "second"})
	if err != nil {
		t.Fatalf("second follow-up: %v", err)
	}

	orig, _ := ix.Original()
	if first.ID != orig.ID || !orig.Ephemeral || orig.Content != "first" {
		t.Errorf("got first follow-up %s and original %+v, want the follow-up to fill the ephemeral deferral", first.ID, orig)
	}
	if fs := ix.Followups(); len(fs) != 1 || fs[0].ID != second.ID || fs[0].Ephemeral {
		t.Errorf("got follow-ups %+v, want only the second, public", fs)
	}
	if msgs := dc.Messages(dc.ChannelID("general")); len(msgs) != 1 || msgs[0].ID != second.ID {
		t.Errorf("got channel messages %+v, want only the public second follow-up", msgs)
	}
}

func TestInteractionDeadline(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t, discordtest.WithInteractionDeadline(50*time.Millisecond))
	s := connect(t, dc, allIntents)
	registerGuild(t, s, dc, askCommand)
	got := interactions(s)

	ix := dc.SlashCommand(t, discordtest.SlashCommand{Name: "ask", Options: []discordtest.CommandOption{discordtest.StringOption("question", "q")}})
	i := next(t, got)
	ix.WaitExpired(t)

	err := s.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource})
	if restCode(err) != 10062 || restStatus(err) != 404 {
		t.Fatalf("got %v, want 404 with code 10062 Unknown interaction", err)
	}
	if _, err := s.FollowupMessageCreate(i, true, &discordgo.WebhookParams{Content: "late"}); restCode(err) != 10015 {
		t.Errorf("follow-up after the deadline: got %v, want 10015 Unknown Webhook", err)
	}
	if ix.Acked() || len(ix.Responses()) != 0 {
		t.Errorf("got acked %v with responses %+v, want nothing recorded", ix.Acked(), ix.Responses())
	}
}

func TestSecondAcknowledgementFails(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	registerGuild(t, s, dc, askCommand)
	got := interactions(s)

	ix := dc.SlashCommand(t, discordtest.SlashCommand{Name: "ask", Options: []discordtest.CommandOption{discordtest.StringOption("question", "q")}})
	i := next(t, got)
	reply := &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "hi", Flags: discordgo.MessageFlagsEphemeral},
	}
	if err := s.InteractionRespond(i, reply); err != nil {
		t.Fatalf("first ack: %v", err)
	}
	err := s.InteractionRespond(i, reply)
	if restCode(err) != 40060 || restStatus(err) != 400 {
		t.Fatalf("got %v, want 400 with code 40060", err)
	}
	r := ix.WaitResponse(t)
	if !r.Ephemeral || r.Content != "hi" || len(ix.Responses()) != 1 {
		t.Errorf("got %+v, want one ephemeral reply", ix.Responses())
	}
	if got := dc.Calls(discordtest.RouteCreateInteractionResponse); got != 2 {
		t.Errorf("got %d callback calls, want 2", got)
	}
}

func TestAutocomplete(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	registerGuild(t, s, dc, askCommand)
	got := interactions(s)

	ix := dc.Autocomplete(t, discordtest.SlashCommand{
		Name:    "ask",
		Options: []discordtest.CommandOption{discordtest.StringOption("question", "wh").Focus()},
	})
	i := next(t, got)
	if i.Type != discordgo.InteractionApplicationCommandAutocomplete {
		t.Fatalf("got type %d, want autocomplete", i.Type)
	}
	opt := i.ApplicationCommandData().Options[0]
	if !opt.Focused || opt.StringValue() != "wh" {
		t.Errorf("got option %+v, want focused wh", opt)
	}
	err := s.InteractionRespond(i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionApplicationCommandAutocompleteResult,
		Data: &discordgo.InteractionResponseData{Choices: []*discordgo.ApplicationCommandOptionChoice{{Name: "why", Value: "why"}, {Name: "when", Value: "when"}}},
	})
	if err != nil {
		t.Fatalf("respond: %v", err)
	}
	r := ix.WaitResponse(t)
	if r.Type != discordgo.InteractionApplicationCommandAutocompleteResult || len(r.Choices) != 2 || r.Choices[1].Name != "when" {
		t.Errorf("got %+v, want two choices", r)
	}
}

func TestSubcommandsAndTypedOptions(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	registerGuild(t, s, dc, &discordgo.ApplicationCommand{
		Name: "team", Description: "Manage the team",
		Options: []*discordgo.ApplicationCommandOption{{
			Type: discordgo.ApplicationCommandOptionSubCommand, Name: "add", Description: "Add a member",
			Options: []*discordgo.ApplicationCommandOption{
				{Type: discordgo.ApplicationCommandOptionChannel, Name: "where", Description: "d", Required: true},
				{Type: discordgo.ApplicationCommandOptionBoolean, Name: "lead", Description: "d"},
				{Type: discordgo.ApplicationCommandOptionUser, Name: "who", Description: "d"},
			},
		}},
	})
	got := interactions(s)
	random := dc.ChannelID("random")

	dc.SlashCommand(t, discordtest.SlashCommand{Name: "team", Options: []discordtest.CommandOption{
		discordtest.Subcommand("add", discordtest.ChannelOption("where", random), discordtest.BoolOption("lead", true), discordtest.UserOption("who", dc.UserID())),
	}})
	data := next(t, got).ApplicationCommandData()
	sub := data.Options[0]
	if sub.Name != "add" || sub.Type != discordgo.ApplicationCommandOptionSubCommand {
		t.Fatalf("got %+v, want subcommand add", sub)
	}
	if got := sub.GetOption("where").ChannelValue(s); got == nil || got.ID != random {
		t.Errorf("got channel %+v, want random", got)
	}
	if !sub.GetOption("lead").BoolValue() {
		t.Error("got lead false, want true")
	}
	if data.Resolved == nil || data.Resolved.Users[dc.UserID()] == nil || data.Resolved.Channels[random] == nil {
		t.Errorf("got resolved %+v, want the user and the channel", data.Resolved)
	}
}

func TestSlashCommandChecksRegistration(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	registerGuild(t, s, dc, askCommand)

	for name, sc := range map[string]discordtest.SlashCommand{
		"unregistered":     {Name: "nope"},
		"missing required": {Name: "ask"},
		"wrong type":       {Name: "ask", Options: []discordtest.CommandOption{discordtest.IntegerOption("question", 1)}},
		"unknown option":   {Name: "ask", Options: []discordtest.CommandOption{discordtest.StringOption("question", "q"), discordtest.StringOption("x", "y")}},
	} {
		ft := &fatalRecorder{TB: t}
		if ix := dc.SlashCommand(ft, sc); ix != nil || ft.msg == "" {
			t.Errorf("%s: dispatched %v, want the test failed", name, ix)
		}
	}
}

// fatalRecorder records Fatalf instead of stopping the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }

// OnAck runs once the acknowledgement is accepted and before the bot has
// the answer; a second callback is not an acknowledgement.
func TestOnAckRunsBeforeTheAnswer(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	registerGuild(t, s, dc, askCommand)
	got := interactions(s)
	var answered bool
	acks := 0
	dc.OnAck(func(ix *discordtest.Interaction) {
		acks++
		if answered || !ix.Acked() {
			t.Errorf("OnAck ran with answered %v, acked %v; want it acked, not answered yet", answered, ix.Acked())
		}
	})
	dc.SlashCommand(t, discordtest.SlashCommand{Name: "ask", ChannelID: dc.ChannelID("general"),
		Options: []discordtest.CommandOption{discordtest.StringOption("question", "why?")}})
	i := next(t, got)
	resp := &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}
	if err := s.InteractionRespond(i, resp); err != nil {
		t.Fatal(err)
	}
	answered = true
	if err := s.InteractionRespond(i, resp); err == nil {
		t.Error("a second callback was accepted")
	}
	if acks != 1 {
		t.Errorf("OnAck ran %d times, want 1", acks)
	}
}
