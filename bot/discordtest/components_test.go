package discordtest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/bot/discordtest"
)

func row(cs ...discordgo.MessageComponent) discordgo.ActionsRow {
	return discordgo.ActionsRow{Components: cs}
}

func button(id, label string) discordgo.Button {
	return discordgo.Button{CustomID: id, Label: label, Style: discordgo.PrimaryButton}
}

// approval is a message with an approve/deny row and a link row.
func approval(content string) *discordgo.MessageSend {
	return &discordgo.MessageSend{
		Content: content,
		Components: []discordgo.MessageComponent{
			row(button("approve", "Approve"), discordgo.Button{CustomID: "deny", Label: "Deny", Style: discordgo.DangerButton}),
			row(discordgo.Button{Label: "Docs", Style: discordgo.LinkButton, URL: "https://example.com/docs"},
				discordgo.Button{CustomID: "later", Label: "Later", Style: discordgo.SecondaryButton, Disabled: true}),
		},
	}
}

func TestComponentsAreValidatedAndStored(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s, err := bot.NewSession(dc.Token(), dc.URL(), allIntents) // REST only
	if err != nil {
		t.Fatal(err)
	}
	general := dc.ChannelID("general")

	sent, err := s.ChannelMessageSendComplex(general, approval("ok?"))
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	m, _ := dc.Message(general, sent.ID)
	if len(m.Components) != 2 || len(m.Buttons()) != 4 {
		t.Fatalf("got components %+v, want two rows with four buttons", m.Components)
	}
	if b, ok := m.Button("deny"); !ok || b.Style != discordgo.DangerButton || b.Label != "Deny" {
		t.Errorf("got deny button %+v, %v", b, ok)
	}
	if got := m.Buttons()[2]; got.URL != "https://example.com/docs" || got.CustomID != "" {
		t.Errorf("got link button %+v", got)
	}
	if len(sent.Components) != 2 {
		t.Errorf("the REST reply carries %d component rows, want 2", len(sent.Components))
	}

	six := make([]discordgo.MessageComponent, 6)
	for i := range six {
		six[i] = button(string(rune('a'+i)), "x")
	}
	for name, tc := range map[string]struct {
		rows []discordgo.MessageComponent
		want string // in the error
	}{
		"six rows":          {[]discordgo.MessageComponent{row(six[0]), row(six[1]), row(six[2]), row(six[3]), row(six[4]), row(six[5])}, "components"},
		"six in a row":      {[]discordgo.MessageComponent{row(six...)}, "Must be between 1 and 5"},
		"empty row":         {[]discordgo.MessageComponent{row()}, "Must be between 1 and 5"},
		"no custom_id":      {[]discordgo.MessageComponent{row(button("", "x"))}, "custom_id"},
		"long custom_id":    {[]discordgo.MessageComponent{row(button(strings.Repeat("c", 101), "x"))}, "custom_id"},
		"long label":        {[]discordgo.MessageComponent{row(button("a", strings.Repeat("l", 81)))}, "label"},
		"duplicate id":      {[]discordgo.MessageComponent{row(button("a", "x")), row(button("a", "y"))}, "COMPONENT_CUSTOM_ID_DUPLICATED"},
		"link without url":  {[]discordgo.MessageComponent{row(discordgo.Button{Label: "x", Style: discordgo.LinkButton})}, "url"},
		"link with id":      {[]discordgo.MessageComponent{row(discordgo.Button{Label: "x", Style: discordgo.LinkButton, URL: "https://x.y", CustomID: "a"})}, "custom_id"},
		"primary with url":  {[]discordgo.MessageComponent{row(discordgo.Button{Label: "x", Style: discordgo.PrimaryButton, URL: "https://x.y", CustomID: "a"})}, "url"},
		"button at the top": {[]discordgo.MessageComponent{button("a", "x")}, "type"},
		"text input":        {[]discordgo.MessageComponent{row(discordgo.TextInput{CustomID: "a", Label: "x", Style: discordgo.TextInputShort})}, "type"},
	} {
		_, err := s.ChannelMessageSendComplex(general, &discordgo.MessageSend{Content: "x", Components: tc.rows})
		if restCode(err) != 50035 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want 50035 naming %q", name, err, tc.want)
		}
	}

	none := []discordgo.MessageComponent{}
	if _, err := s.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: sent.ID, Channel: general, Components: &none}); err != nil {
		t.Fatalf("remove components: %v", err)
	}
	if m, _ := dc.Message(general, sent.ID); len(m.Components) != 0 || m.Content != "ok?" {
		t.Errorf("got %+v, want the content without components", m)
	}
	dup := []discordgo.MessageComponent{row(button("a", "x"), button("a", "y"))}
	if _, err := s.ChannelMessageEditComplex(&discordgo.MessageEdit{ID: sent.ID, Channel: general, Components: &dup}); restCode(err) != 50035 {
		t.Errorf("edit with duplicate ids: got %v, want 50035", err)
	}
}

// clickSetup connects a session and posts the approval message as the bot.
func clickSetup(t *testing.T, opts ...discordtest.Option) (*discordtest.Server, *discordgo.Session, <-chan *discordgo.Interaction, *discordgo.Message) {
	t.Helper()
	dc := discordtest.New(t, opts...)
	s := connect(t, dc, allIntents)
	got := interactions(s)
	sent, err := s.ChannelMessageSendComplex(dc.ChannelID("general"), approval("deploy?"))
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	return dc, s, got, sent
}

func TestClickButtonUpdatesTheMessage(t *testing.T) {
	t.Parallel()
	dc, s, got, sent := clickSetup(t)
	in := watchMessages(s)
	var updates inbox
	s.AddHandler(func(_ *discordgo.Session, u *discordgo.MessageUpdate) {
		updates.mu.Lock()
		defer updates.mu.Unlock()
		updates.msgs = append(updates.msgs, u.Message)
	})

	ix := dc.ClickButton(t, discordtest.ClickButton{MessageID: sent.ID, CustomID: "approve", Permissions: discordgo.PermissionManageThreads})
	i := next(t, got)
	if i.Type != discordgo.InteractionMessageComponent || i.ID != ix.ID {
		t.Fatalf("got interaction type %d, want a component interaction", i.Type)
	}
	data := i.MessageComponentData()
	if data.CustomID != "approve" || data.ComponentType != discordgo.ButtonComponent {
		t.Errorf("got data %+v, want a click on approve", data)
	}
	if i.Message == nil || i.Message.ID != sent.ID || len(i.Message.Components) != 2 {
		t.Errorf("got message %+v, want the one with the buttons", i.Message)
	}
	if i.Member == nil || i.Member.User.ID != dc.UserID() || i.Member.Permissions != discordgo.PermissionManageThreads || i.GuildID != dc.GuildID() {
		t.Errorf("got member %+v in guild %s, want the user with their permissions", i.Member, i.GuildID)
	}

	err := s.InteractionRespond(i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: "deploying", Components: []discordgo.MessageComponent{}},
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	r := ix.WaitResponse(t)
	if r.Type != discordgo.InteractionResponseUpdateMessage || r.MessageID != sent.ID {
		t.Errorf("got response %+v, want an update of %s", r, sent.ID)
	}
	m, _ := dc.Message(sent.ChannelID, sent.ID)
	if m.Content != "deploying" || len(m.Components) != 0 || m.Edits != 1 {
		t.Errorf("got %+v, want the message updated without buttons", m)
	}
	if msgs := dc.Messages(sent.ChannelID); len(msgs) != 1 {
		t.Errorf("got %d channel messages, want the update to make none", len(msgs))
	}
	dc.WaitFor(t, func() bool { return len(updates.find(sent.ID)) == 1 }, "MESSAGE_UPDATE of the clicked message")
	// Events arrive in order: a MESSAGE_CREATE from the update would
	// have come before the MESSAGE_UPDATE. The post's own echo may have
	// come before the handler was added, or after.
	in.mu.Lock()
	for _, m := range in.msgs {
		if m.ID != sent.ID || len(in.msgs) > 1 {
			t.Errorf("got MESSAGE_CREATE %s %q, want the update to create no message", m.ID, m.Content)
		}
	}
	in.mu.Unlock()
	if err := s.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}); restCode(err) != 40060 {
		t.Errorf("second acknowledgement: got %v, want 40060", err)
	}
}

func TestClickButtonDeferredUpdateThenEditOriginal(t *testing.T) {
	t.Parallel()
	dc, s, got, sent := clickSetup(t)

	ix := dc.ClickButton(t, discordtest.ClickButton{ChannelID: sent.ChannelID, MessageID: sent.ID, CustomID: "deny"})
	i := next(t, got)
	if err := s.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}); err != nil {
		t.Fatalf("defer update: %v", err)
	}
	content := "denied"
	none := []discordgo.MessageComponent{}
	edited, err := s.InteractionResponseEdit(i, &discordgo.WebhookEdit{Content: &content, Components: &none})
	if err != nil {
		t.Fatalf("edit original: %v", err)
	}
	if edited.ID != sent.ID {
		t.Errorf("edited %s, want the clicked message %s", edited.ID, sent.ID)
	}
	m, _ := dc.Message(sent.ChannelID, sent.ID)
	if m.Content != "denied" || len(m.Components) != 0 {
		t.Errorf("got %+v, want the clicked message edited", m)
	}
	if orig, ok := ix.Original(); !ok || orig.ID != sent.ID {
		t.Errorf("got original %+v, want the clicked message", orig)
	}
	rs := ix.WaitResponses(t, 2)
	if rs[0].Type != discordgo.InteractionResponseDeferredMessageUpdate || rs[1].Kind != discordtest.ResponseEditOriginal || rs[1].MessageID != sent.ID {
		t.Errorf("got responses %+v, want a deferred update then an edit of the clicked message", rs)
	}
	bad := []discordgo.MessageComponent{row(button("", "x"))}
	if _, err := s.InteractionResponseEdit(i, &discordgo.WebhookEdit{Components: &bad}); restCode(err) != 50035 {
		t.Errorf("webhook edit with a button without custom_id: got %v, want 50035", err)
	}
	if _, err := s.FollowupMessageCreate(i, true, &discordgo.WebhookParams{Content: "x", Components: bad}); restCode(err) != 50035 {
		t.Errorf("follow-up with a button without custom_id: got %v, want 50035", err)
	}
	if msgs := dc.Messages(sent.ChannelID); len(msgs) != 1 {
		t.Errorf("got %d channel messages, want only the clicked one", len(msgs))
	}
}

func TestClickButtonReplyAndDeadline(t *testing.T) {
	t.Parallel()
	dc, s, got, sent := clickSetup(t, discordtest.WithInteractionDeadline(time.Second))

	ix := dc.ClickButton(t, discordtest.ClickButton{MessageID: sent.ID, CustomID: "approve"})
	i := next(t, got)
	err := s.InteractionRespond(i, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "approved by <@" + dc.UserID() + ">"},
	})
	if err != nil {
		t.Fatalf("reply: %v", err)
	}
	orig, ok := ix.Original()
	if !ok || orig.ID == sent.ID || orig.Reference == nil || orig.Reference.MessageID != sent.ID {
		t.Errorf("got original %+v, want a new message replying to the clicked one", orig)
	}
	if m, _ := dc.Message(sent.ChannelID, sent.ID); len(m.Buttons()) != 4 {
		t.Errorf("a type 4 answer changed the clicked message: %+v", m)
	}

	late := dc.ClickButton(t, discordtest.ClickButton{MessageID: sent.ID, CustomID: "deny"})
	j := next(t, got)
	late.WaitExpired(t)
	err = s.InteractionRespond(j, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate})
	if restCode(err) != 10062 {
		t.Errorf("after the deadline: got %v, want 10062", err)
	}
}

func TestCallbackTypesFitTheInteraction(t *testing.T) {
	t.Parallel()
	dc, s, got, _ := clickSetup(t)
	registerGuild(t, s, dc, askCommand)

	dc.SlashCommand(t, discordtest.SlashCommand{Name: "ask", Options: []discordtest.CommandOption{discordtest.StringOption("question", "q")}})
	i := next(t, got)
	for _, typ := range []discordgo.InteractionResponseType{discordgo.InteractionResponseDeferredMessageUpdate, discordgo.InteractionResponseUpdateMessage} {
		err := s.InteractionRespond(i, &discordgo.InteractionResponse{Type: typ, Data: &discordgo.InteractionResponseData{Content: "x"}})
		if restCode(err) != 50035 || restStatus(err) != 400 {
			t.Errorf("type %d to a slash command: got %v, want 400 50035", typ, err)
		}
	}
	if err := s.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}); err != nil {
		t.Errorf("a valid callback after rejected ones: %v", err)
	}
}

func TestClickButtonChecksTheButton(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s, err := bot.NewSession(dc.Token(), dc.URL(), allIntents)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := s.ChannelMessageSendComplex(dc.ChannelID("general"), approval("x"))
	if err != nil {
		t.Fatal(err)
	}
	plain := dc.UserMessage(dc.ChannelID("general"), dc.UserID(), "no buttons")
	for name, cb := range map[string]discordtest.ClickButton{
		"unknown custom_id": {MessageID: sent.ID, CustomID: "nope"},
		"disabled":          {MessageID: sent.ID, CustomID: "later"},
		"no buttons":        {MessageID: plain.ID, CustomID: "approve"},
		"unknown message":   {MessageID: "1", CustomID: "approve"},
		"other channel":     {MessageID: sent.ID, CustomID: "approve", ChannelID: dc.ChannelID("random")},
	} {
		ft := &fatalRecorder{TB: t}
		if ix := dc.ClickButton(ft, cb); ix != nil || ft.msg == "" {
			t.Errorf("%s: dispatched %v, want the test failed", name, ix)
		}
	}
}
