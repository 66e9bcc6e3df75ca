package master

import (
	"log/slog"
	"strings"
	"testing"
)

func TestPersonaName(t *testing.T) {
	t.Parallel()
	for role, want := range map[string]string{
		"researcher":             "Researcher",
		"market-analyst":         "Market analyst",
		"discord-mod":            "Dis-cord mod",
		"clyde":                  "Cly-de",
		"my_discordclyde":        "My dis-cordcly-de",
		"here":                   "Here (member)",
		"everyone":               "Everyone (member)",
		"x@y#z:`":                "Xyz",
		"":                       "Member",
		strings.Repeat("a", 100): strings.Repeat("a", 79) + "…",
	} {
		got := PersonaName(role)
		if role == strings.Repeat("a", 100) {
			want = "A" + want[1:]
		}
		if got != want {
			t.Errorf("PersonaName(%q) = %q, want %q", role, got, want)
		}
		if l := strings.ToLower(got); strings.Contains(l, "discord") || strings.Contains(l, "clyde") {
			t.Errorf("PersonaName(%q) = %q: Discord refuses it", role, got)
		}
	}
}

func TestPersonaParts(t *testing.T) {
	t.Parallel()
	roster := []Role{{Name: "researcher", Avatar: "https://example.com/r.png"}, {Name: "writer"}}
	s := Session{ChannelID: "parent"}
	long := strings.Repeat("word ", 500) // 2,500 characters: two parts
	parts, personas := personaParts(s, roster, "Intro.", []Line{
		{Member: "researcher", Text: long}, {Member: "writer", Text: "Same."}, {Member: "writer", Text: "Same."}})
	if len(parts) != 4 || len(personas) != 4 {
		t.Fatalf("got %d parts, want 4 (intro, the long part split in two, one of the doubled lines)", len(parts))
	}
	if personas[0] != nil || parts[0] != "Intro." {
		t.Errorf("first part = %q as %+v, want the coordinator's text in callon's voice", parts[0], personas[0])
	}
	for i, want := range []string{"researcher", "researcher", "writer"} {
		p := personas[i+1]
		if p == nil || p.Role != want || p.Parent != "parent" || len([]rune(parts[i+1])) > MaxMessageLen-100 {
			t.Errorf("part %d = %+v (%d characters)", i+1, p, len([]rune(parts[i+1])))
		}
	}
	if personas[1].Avatar != "https://example.com/r.png" || personas[3].Avatar != "" || personas[1].Name != "Researcher" {
		t.Errorf("personas = %+v, %+v", personas[1], personas[3])
	}
	many := make([]Line, 6)
	for i := range many {
		many[i] = Line{Member: "writer", Text: strings.Repeat("word ", 390) + string(rune('a'+i))}
	}
	parts, _ = personaParts(s, roster, long+long, many)
	if len(parts) != maxReplyParts || !strings.HasSuffix(parts[len(parts)-1], "*(reply shortened)*") {
		t.Errorf("got %d parts, want at most %d, the last shortened", len(parts), maxReplyParts)
	}
}

func TestReplyExchange(t *testing.T) {
	t.Parallel()
	env := decisionEnv{roster: DefaultRoles(), personas: true}
	for _, c := range []struct {
		args, wantErr string
	}{
		{`{"text":"hi","exchange":[{"member":"writer","text":" ok "}]}`, ""},
		{`{"text":"hi","exchange":[{"member":"coordinator","text":"ok"}]}`, "not on the team"},
		{`{"text":"hi","exchange":[{"member":"writer","text":" "}]}`, "is empty"},
		{`{"text":"hi","exchange":[{"member":"writer","text":"ok","as":"admin"}]}`, "unknown field"},
	} {
		d, err := parseDecision(ToolCall{Name: ToolReply, Arguments: c.args}, env)
		switch {
		case c.wantErr == "" && (err != nil || len(d.exchange) != 1 || d.exchange[0].Text != "ok"):
			t.Errorf("%s: %+v, %v", c.args, d.exchange, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: err %v, want %q", c.args, err, c.wantErr)
		}
	}
	if _, err := parseDecision(ToolCall{Name: ToolReply, Arguments: `{"text":"hi","exchange":[{"member":"writer","text":"ok"}]}`},
		decisionEnv{roster: DefaultRoles()}); err == nil {
		t.Error("an exchange accepted from a team without personas")
	}
	for _, tool := range masterTools(decisionEnv{roster: DefaultRoles()}) {
		if tool.Name == ToolReply && strings.Contains(string(tool.Parameters), "exchange") {
			t.Error("reply offers an exchange to a team without personas")
		}
	}
}

// A reply presented as an exchange ends the turn like any reply: one
// FinishTurn, each part with its persona; with no other turn queued, the
// step ends there instead of opening the turn again.
func TestPersonaReplyEndsTheStep(t *testing.T) {
	t.Parallel()
	f := &orchFake{turn: Turn{ID: 7, SessionID: 1, State: TurnRunning}, roster: DefaultRoles(),
		sess: Session{ID: 1, ChannelID: "c1", Features: Features{Personas: true, Review: ReviewOff}}}
	var personas []*Persona
	f.FinishFunc = func(fin Finish) error {
		personas = fin.Personas
		return nil
	}
	llm := &scriptLLM{replies: []func() (ChatResponse, error){
		call("reply", `{"text":"Here it is.","exchange":[{"member":"writer","text":"My part."}]}`)}}
	o := NewOrchestrator(OrchestratorConfig{Owner: "p", Model: "m", Retries: 3}, f, llm, slog.New(slog.DiscardHandler))
	if !o.Step(t.Context(), 1) {
		t.Fatal("the step did not run")
	}
	if want := "finish reply done: Here it is.|My part."; len(f.log) != 1 || f.log[0] != want {
		t.Fatalf("log = %q, want %q", f.log, want)
	}
	if len(personas) != 2 || personas[0] != nil || personas[1] == nil || personas[1].Role != "writer" || personas[1].Parent != "c1" {
		t.Errorf("personas = %+v, want callon's voice, then the writer's in c1", personas)
	}
	if f.opens != 1 {
		t.Errorf("the turn was opened %d times, want once: nothing is queued after it", f.opens)
	}
}
