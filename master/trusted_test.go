package master

import (
	"strings"
	"testing"
)

func TestParseBotRequest(t *testing.T) {
	t.Parallel()
	const self = "42"
	tests := []struct {
		content        string
		ok, err        bool
		goal, reportTo string
	}{
		{content: "<@42> build the login page", ok: true, goal: "build the login page"},
		{content: "  <@!42>   build it  ", ok: true, goal: "build it"},
		{content: "<@42> build it report_to: <#777>", ok: true, goal: "build it", reportTo: "777"},
		{content: "<@42> REPORT_TO:<#777>\nbuild it", ok: true, goal: "build it", reportTo: "777"},
		{content: "<@42>", ok: true, err: true},
		{content: "<@42> report_to: <#777>", ok: true, err: true, reportTo: "777"},
		{content: "<@42> " + strings.Repeat("x", MaxGoalLen+1), ok: true, err: true},
		{content: "please <@42> build it"}, // the mention must come first
		{content: "<@43> build it"},        // another bot
		{content: "<@&42> build it"},       // a role with the same id
		{content: "build it"},
	}
	for _, tc := range tests {
		r, ok, err := ParseBotRequest(tc.content, self)
		if ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("%q: got ok %t, err %v; want ok %t, an error %t", tc.content, ok, err, tc.ok, tc.err)
			continue
		}
		if err == nil && (r.Goal != tc.goal || r.ReportTo != tc.reportTo) {
			t.Errorf("%q: got %+v, want goal %q, report_to %q", tc.content, r, tc.goal, tc.reportTo)
		}
	}
	if _, ok, _ := ParseBotRequest("<@> build it", ""); ok {
		t.Error("a request with no known self id was taken")
	}
}

func TestTrustsAndBotsManageNothing(t *testing.T) {
	t.Parallel()
	acc := Access{
		{Action: AccessTalk, Kind: AccessUser, ID: "7"},
		{Action: AccessTrust, Kind: AccessUser, ID: "9"},
	}
	if !acc.Trusts("9") || acc.Trusts("7") || acc.Trusts("") {
		t.Errorf("Trusts: got 9 %t, 7 %t, \"\" %t; want only 9", acc.Trusts("9"), acc.Trusts("7"), acc.Trusts(""))
	}
	s := Session{OwnerID: "9"}
	if (Actor{UserID: "9", Permissions: PermAdministrator, Bot: true}).MayManage(s) {
		t.Error("a bot that owns the team, with Administrator, may manage it")
	}
	if !(Actor{UserID: "9"}).MayManage(s) {
		t.Error("the owner may not manage the team")
	}
	if got := userLine("9", true, "hi"); got != "<@9> (a bot, not a person): hi" {
		t.Errorf("a bot's line = %q", got)
	}
}

func TestReportTextsMentionTheBotThatAsked(t *testing.T) {
	t.Parallel()
	from := Session{GuildID: "1", ThreadID: "2", Goal: "Build it", RequestedByBot: "9", RequestMessageID: "2"}
	posted, _ := ReportTexts(from, "done", false)
	if !strings.HasPrefix(posted[0], "<@9> 📬") {
		t.Errorf("the report's first part = %q, want the bot's mention first", posted[0])
	}
	from.RequestedByBot = ""
	if posted, _ = ReportTexts(from, "done", false); strings.Contains(posted[0], "<@") {
		t.Errorf("a person's team's report mentions someone: %q", posted[0])
	}
}
