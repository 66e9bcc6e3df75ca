package discordtest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/bot/discordtest"
)

// feedbackModal has a required short title and an optional, prefilled
// paragraph of at most 200 characters.
func feedbackModal() *discordgo.InteractionResponse {
	return &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseModal,
		Data: &discordgo.InteractionResponseData{
			CustomID: "feedback",
			Title:    "Feedback",
			Components: []discordgo.MessageComponent{
				row(discordgo.TextInput{CustomID: "title", Label: "Title", Style: discordgo.TextInputShort, Required: true, MinLength: 3}),
				row(discordgo.TextInput{CustomID: "body", Label: "Details", Style: discordgo.TextInputParagraph, MaxLength: 200, Value: "nothing"}),
			},
		},
	}
}

// modalValues returns a modal submission's values by custom_id.
func modalValues(t *testing.T, i *discordgo.Interaction) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range i.ModalSubmitData().Components {
		r, ok := c.(*discordgo.ActionsRow)
		if !ok || len(r.Components) != 1 {
			t.Fatalf("got component %#v, want an action row with one text input", c)
		}
		in, ok := r.Components[0].(*discordgo.TextInput)
		if !ok {
			t.Fatalf("got %#v, want a text input", r.Components[0])
		}
		out[in.CustomID] = in.Value
	}
	return out
}

func TestModalAnswersASlashCommand(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	registerGuild(t, s, dc, askCommand)
	got := interactions(s)

	ix := dc.SlashCommand(t, discordtest.SlashCommand{Name: "ask", Options: []discordtest.CommandOption{discordtest.StringOption("question", "q")}})
	i := next(t, got)
	if err := s.InteractionRespond(i, feedbackModal()); err != nil {
		t.Fatalf("modal: %v", err)
	}
	m := ix.WaitModal(t)
	if m.CustomID != "feedback" || m.Title != "Feedback" || len(m.Inputs) != 2 || !m.Inputs[0].Required ||
		m.Inputs[0].MinLength != 3 || m.Inputs[1].MaxLength != 200 || m.Inputs[1].Value != "nothing" {
		t.Errorf("got modal %+v, want the feedback modal", m)
	}
	if r := ix.WaitResponse(t); r.Type != discordgo.InteractionResponseModal || r.Modal == nil || r.Modal.CustomID != "feedback" {
		t.Errorf("got response %+v, want the modal", r)
	}
	if _, ok := ix.Original(); ok {
		t.Error("a modal made an original message")
	}

	sub := dc.SubmitModal(t, ix, map[string]string{"title": "slow"})
	j := next(t, got)
	if j.Type != discordgo.InteractionModalSubmit || j.ID != sub.ID || j.ModalSubmitData().CustomID != "feedback" {
		t.Fatalf("got interaction %+v, want the submission of feedback", j)
	}
	if vals := modalValues(t, j); vals["title"] != "slow" || vals["body"] != "nothing" {
		t.Errorf("got values %v, want the typed title and the prefilled body", vals)
	}
	if j.Member == nil || j.Member.User.ID != dc.UserID() || j.Message != nil {
		t.Errorf("got member %+v and message %+v, want the user and no message", j.Member, j.Message)
	}
	for _, typ := range []discordgo.InteractionResponseType{discordgo.InteractionResponseModal, discordgo.InteractionResponseDeferredMessageUpdate} {
		resp := &discordgo.InteractionResponse{Type: typ}
		if typ == discordgo.InteractionResponseModal {
			resp = feedbackModal()
		}
		if err := s.InteractionRespond(j, resp); restCode(err) != 50035 || restStatus(err) != 400 {
			t.Errorf("callback %d to a modal submit from a command: got %v, want 400 50035", typ, err)
		}
	}
	err := s.InteractionRespond(j, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseChannelMessageWithSource,
		Data: &discordgo.InteractionResponseData{Content: "thanks"},
	})
	if err != nil {
		t.Fatalf("answer the submission: %v", err)
	}
	if orig, ok := sub.Original(); !ok || orig.Content != "thanks" || orig.Reference != nil {
		t.Errorf("got original %+v, want the thanks message, not a reply", orig)
	}
	ft := &fatalRecorder{TB: t}
	if again := dc.SubmitModal(ft, ix, map[string]string{"title": "again"}); again != nil || ft.msg == "" {
		t.Error("a second submission of a closed modal was dispatched")
	}
}

func TestModalFromButtonUpdatesTheMessage(t *testing.T) {
	t.Parallel()
	dc, s, got, sent := clickSetup(t)

	click := dc.ClickButton(t, discordtest.ClickButton{MessageID: sent.ID, CustomID: "deny"})
	if err := s.InteractionRespond(next(t, got), feedbackModal()); err != nil {
		t.Fatalf("modal: %v", err)
	}
	dc.SubmitModal(t, click, map[string]string{"title": "risky", "body": "see the incident"})
	j := next(t, got)
	if j.Message == nil || j.Message.ID != sent.ID {
		t.Fatalf("got message %+v, want the clicked message on the submission", j.Message)
	}
	if vals := modalValues(t, j); vals["body"] != "see the incident" {
		t.Errorf("got values %v", vals)
	}
	err := s.InteractionRespond(j, &discordgo.InteractionResponse{
		Type: discordgo.InteractionResponseUpdateMessage,
		Data: &discordgo.InteractionResponseData{Content: "denied: risky", Components: []discordgo.MessageComponent{}},
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if m, _ := dc.Message(sent.ChannelID, sent.ID); m.Content != "denied: risky" || len(m.Components) != 0 {
		t.Errorf("got %+v, want the clicked message updated", m)
	}
}

func TestModalIsValidated(t *testing.T) {
	t.Parallel()
	dc, s, got, sent := clickSetup(t)
	dc.ClickButton(t, discordtest.ClickButton{MessageID: sent.ID, CustomID: "approve"})
	i := next(t, got)

	short := discordgo.TextInput{CustomID: "a", Label: "A", Style: discordgo.TextInputShort}
	with := func(f func(*discordgo.TextInput)) discordgo.MessageComponent {
		in := short
		f(&in)
		return row(in)
	}
	six := []discordgo.MessageComponent{}
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		six = append(six, with(func(in *discordgo.TextInput) { in.CustomID = id }))
	}
	for name, tc := range map[string]struct {
		data discordgo.InteractionResponseData
		want string
	}{
		"long title":      {discordgo.InteractionResponseData{CustomID: "m", Title: strings.Repeat("t", 46), Components: []discordgo.MessageComponent{row(short)}}, "title"},
		"no custom_id":    {discordgo.InteractionResponseData{Title: "T", Components: []discordgo.MessageComponent{row(short)}}, "custom_id"},
		"no rows":         {discordgo.InteractionResponseData{CustomID: "m", Title: "T"}, "components"},
		"six rows":        {discordgo.InteractionResponseData{CustomID: "m", Title: "T", Components: six}, "components"},
		"two in a row":    {discordgo.InteractionResponseData{CustomID: "m", Title: "T", Components: []discordgo.MessageComponent{row(short, discordgo.TextInput{CustomID: "b", Label: "B", Style: discordgo.TextInputShort})}}, "one text input"},
		"button":          {discordgo.InteractionResponseData{CustomID: "m", Title: "T", Components: []discordgo.MessageComponent{row(button("b", "B"))}}, "type"},
		"long label":      {discordgo.InteractionResponseData{CustomID: "m", Title: "T", Components: []discordgo.MessageComponent{with(func(in *discordgo.TextInput) { in.Label = strings.Repeat("l", 46) })}}, "label"},
		"style 3":         {discordgo.InteractionResponseData{CustomID: "m", Title: "T", Components: []discordgo.MessageComponent{with(func(in *discordgo.TextInput) { in.Style = 3 })}}, "style"},
		"max_length 4001": {discordgo.InteractionResponseData{CustomID: "m", Title: "T", Components: []discordgo.MessageComponent{with(func(in *discordgo.TextInput) { in.MaxLength = 4001 })}}, "max_length"},
		"duplicate input": {discordgo.InteractionResponseData{CustomID: "m", Title: "T", Components: []discordgo.MessageComponent{row(short), row(short)}}, "COMPONENT_CUSTOM_ID_DUPLICATED"},
	} {
		err := s.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseModal, Data: &tc.data})
		if restCode(err) != 50035 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want 50035 naming %q", name, err, tc.want)
		}
	}
	if err := s.InteractionRespond(i, feedbackModal()); err != nil {
		t.Errorf("a valid modal after rejected ones: %v", err)
	}
}

func TestModalAfterDeferralIsRefused(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	registerGuild(t, s, dc, askCommand)
	got := interactions(s)

	ix := dc.SlashCommand(t, discordtest.SlashCommand{Name: "ask", Options: []discordtest.CommandOption{discordtest.StringOption("question", "q")}})
	i := next(t, got)
	if err := s.InteractionRespond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}); err != nil {
		t.Fatal(err)
	}
	if err := s.InteractionRespond(i, feedbackModal()); restCode(err) != 40060 {
		t.Errorf("modal after a deferral: got %v, want 40060", err)
	}
	if _, ok := ix.Modal(); ok {
		t.Error("the refused modal was recorded")
	}
	ft := &fatalRecorder{TB: t}
	if sub := dc.SubmitModal(ft, ix, nil); sub != nil || !strings.Contains(ft.msg, "no modal") {
		t.Errorf("submit without a modal: dispatched %v, failure %q", sub, ft.msg)
	}
}

func TestSubmitModalChecksValuesAndDeadline(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t, discordtest.WithInteractionDeadline(time.Second))
	s := connect(t, dc, allIntents)
	registerGuild(t, s, dc, askCommand)
	got := interactions(s)

	ix := dc.SlashCommand(t, discordtest.SlashCommand{Name: "ask", Options: []discordtest.CommandOption{discordtest.StringOption("question", "q")}})
	if err := s.InteractionRespond(next(t, got), feedbackModal()); err != nil {
		t.Fatal(err)
	}
	for name, values := range map[string]map[string]string{
		"required missing": {"body": "x"},
		"too short":        {"title": "ab"},
		"too long":         {"title": "abc", "body": strings.Repeat("b", 201)},
		"unknown input":    {"title": "abc", "color": "red"},
	} {
		ft := &fatalRecorder{TB: t}
		if sub := dc.SubmitModal(ft, ix, values); sub != nil || ft.msg == "" {
			t.Errorf("%s: dispatched %v, want the test failed", name, sub)
		}
	}

	sub := dc.SubmitModal(t, ix, map[string]string{"title": "late"})
	j := next(t, got)
	sub.WaitExpired(t)
	if err := s.InteractionRespond(j, &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredChannelMessageWithSource}); restCode(err) != 10062 {
		t.Errorf("answer after the deadline: got %v, want 10062", err)
	}
	// Unacknowledged, the modal stays open on the client: it may be sent again.
	dc.SubmitModal(t, ix, map[string]string{"title": "retry"})
	if vals := modalValues(t, next(t, got)); vals["title"] != "retry" {
		t.Errorf("got %v, want the second submission", vals)
	}
}
