package discordtest_test

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gorilla/websocket"

	"github.com/callonbot/callon/bot"
	"github.com/callonbot/callon/bot/discordtest"
)

// rawGateway dials dc's gateway with a plain websocket, reads HELLO and
// sends op with d: a client that does exactly what the test says.
func rawGateway(t *testing.T, dc *discordtest.Server, op int, d any) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(dc.URL(), "http")+"/gateway?v=9&encoding=json", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = ws.Close() })
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	var hello struct{ Op int }
	if err := ws.ReadJSON(&hello); err != nil || hello.Op != 10 {
		t.Fatalf("got op %d, %v; want HELLO", hello.Op, err)
	}
	if err := ws.WriteJSON(map[string]any{"op": op, "d": d}); err != nil {
		t.Fatal(err)
	}
	return ws
}

// closeCode reads until the server closes ws and returns the close frame.
func closeCode(t *testing.T, ws *websocket.Conn) (int, string) {
	t.Helper()
	for {
		_, _, err := ws.ReadMessage() // skipping frames queued before the close
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code, ce.Text
		}
		if err != nil {
			t.Fatalf("got %v, want a close frame", err)
		}
	}
}

func identifyPayload(token string, intents discordgo.Intent, shard []int) map[string]any {
	d := map[string]any{"token": token, "intents": intents, "properties": map[string]string{"os": "linux"}}
	if shard != nil {
		d["shard"] = shard
	}
	return d
}

func TestWrongTokenOnIdentifyClosesWith4004(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s, err := bot.NewSession(dc.Token(), dc.URL(), allIntents)
	if err != nil {
		t.Fatal(err)
	}
	s.Identify.Token = "Bot wrong" // REST works, IDENTIFY does not

	err = s.Open()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 4004 || ce.Text != "Authentication failed." {
		t.Fatalf("got %v, want discordgo's Open to fail with close 4004", err)
	}
	st := dc.GatewayStats()
	if st.IdentifyAttempts != 1 || st.Identifies != 0 || st.Closes != 1 || st.LastCloseCode != 4004 {
		t.Errorf("got stats %+v, want one refused IDENTIFY", st)
	}
	if log := dc.IdentifyLog(); len(log) != 1 || log[0].CloseCode != 4004 || log[0].Intents != allIntents {
		t.Errorf("got identify log %+v", log)
	}
}

func TestWrongTokenOnRESTAnswers401(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	req, _ := http.NewRequest("GET", dc.URL()+"/api/v9/users/@me", nil)
	req.Header.Set("Authorization", "Bot wrong")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 401 || string(body) != `{"code":0,"message":"401: Unauthorized"}` {
		t.Errorf("got %d %s, want 401 with Discord's body", resp.StatusCode, body)
	}
}

func TestRevokedTokenIsRefusedEverywhere(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s, err := bot.NewSession(dc.Token(), dc.URL(), allIntents) // REST only: discordgo would retry the gateway forever
	if err != nil {
		t.Fatal(err)
	}
	old := rawGateway(t, dc, 2, identifyPayload("Bot "+dc.Token(), allIntents, nil))
	dc.WaitConnected(t)

	dc.RevokeToken()
	if code, text := closeCode(t, old); code != 4004 || text != "Authentication failed." {
		t.Errorf("open connection: got close %d %q, want 4004", code, text)
	}
	if _, err := s.User("@me"); restStatus(err) != 401 {
		t.Errorf("REST after revoking: got %v, want 401", err)
	}
	ws := rawGateway(t, dc, 2, identifyPayload("Bot "+dc.Token(), allIntents, nil))
	if code, _ := closeCode(t, ws); code != 4004 {
		t.Errorf("IDENTIFY after revoking: got close %d, want 4004", code)
	}
	ws = rawGateway(t, dc, 6, map[string]any{"token": "Bot " + dc.Token(), "session_id": "x", "seq": 1})
	if code, _ := closeCode(t, ws); code != 4004 {
		t.Errorf("RESUME after revoking: got close %d, want 4004", code)
	}
	if st := dc.GatewayStats(); st.IdentifyAttempts != 2 || st.ResumeAttempts != 1 || st.Closes != 3 {
		t.Errorf("got stats %+v, want two IDENTIFYs, a RESUME and three closes", st)
	}
}

func TestCloseGatewayWithResumableCode(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	s := connect(t, dc, allIntents)
	in := watchMessages(s)

	dc.CloseGateway(4000, "Unknown error.")
	missed := dc.UserMessage(dc.ChannelID("general"), dc.UserID(), "while closed")
	dc.WaitFor(t, func() bool { return len(in.find(missed.ID)) == 1 }, "the missed message after the resume")
	st := dc.GatewayStats()
	if st.Resumes != 1 || st.Identifies != 1 || st.Closes != 1 || st.LastCloseCode != 4000 {
		t.Errorf("got stats %+v, want one close with 4000 and a resume", st)
	}
}

func TestDiscordgoIgnoresAFatalCloseCode(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t)
	connect(t, dc, allIntents)

	dc.CloseGateway(4014, "Disallowed intent(s).")
	dc.WaitFor(t, func() bool { return dc.GatewayStats().Identifies == 2 && dc.Connected() }, "discordgo to identify again")
	st := dc.GatewayStats()
	if st.FailedResumes != 1 || st.IdentifyAttempts != 2 || st.LastCloseCode != 4014 {
		t.Errorf("got stats %+v, want a failed RESUME then a second IDENTIFY: discordgo does not stop on 4014", st)
	}
}

func TestPrivilegedIntentsPerSwitch(t *testing.T) {
	t.Parallel()
	dc := discordtest.New(t, discordtest.WithPrivilegedIntents(discordgo.IntentGuildMembers))
	ws := rawGateway(t, dc, 2, identifyPayload("Bot "+dc.Token(), discordgo.IntentsGuilds|discordgo.IntentMessageContent, nil))
	if code, text := closeCode(t, ws); code != 4014 || text != "Disallowed intent(s)." {
		t.Errorf("MESSAGE_CONTENT not enabled: got close %d %q, want 4014", code, text)
	}
	s := connect(t, dc, discordgo.IntentsGuilds|discordgo.IntentsGuildMessages|discordgo.IntentGuildMembers)
	app, err := s.Application("@me")
	if err != nil || app.Flags != 1<<15 {
		t.Errorf("got application flags %d, %v; want only GATEWAY_GUILD_MEMBERS_LIMITED", app.Flags, err)
	}

	general := dc.ChannelID("general")
	other := dc.UserMessage(general, dc.UserID(), "secret")
	mention := dc.UserMessage(general, dc.UserID(), "<@"+dc.BotUserID()+"> look")
	got, err := s.ChannelMessages(general, 10, "", "", "")
	if err != nil || len(got) != 2 || got[1].ID != other.ID || got[1].Content != "" || got[0].Content != mention.Content {
		t.Errorf("got history %v, %v; want others' content stripped over REST too, mentions kept", got, err)
	}
}
