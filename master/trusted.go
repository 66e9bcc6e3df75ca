package master

import (
	"fmt"
	"regexp"
	"strings"
)

// BotRequest is what a trusted bot asks for by mentioning callon: a team
// working on Goal, reporting to ReportTo ("" for the channel the bot
// posted in).
type BotRequest struct {
	Goal     string
	ReportTo string // a channel id
}

// reportToClause is the optional "report_to: <#id>" of a bot's request.
var reportToClause = regexp.MustCompile(`(?i)\breport_to:\s*<#([0-9]{1,20})>`)

// ParseBotRequest reads a message that starts with a mention of callon
// (selfID), followed by the goal and, anywhere after the mention, an
// optional "report_to: <#channel>". ok is false when the message does not
// start with the mention; the goal is checked with CheckGoal.
func ParseBotRequest(content, selfID string) (r BotRequest, ok bool, err error) {
	if selfID == "" {
		return r, false, nil
	}
	rest := strings.TrimSpace(content)
	for _, m := range []string{"<@" + selfID + ">", "<@!" + selfID + ">"} {
		if after, found := strings.CutPrefix(rest, m); found {
			rest, ok = after, true
			break
		}
	}
	if !ok {
		return r, false, nil
	}
	if m := reportToClause.FindStringSubmatch(rest); m != nil {
		r.ReportTo = m[1]
		rest = reportToClause.ReplaceAllString(rest, " ")
	}
	r.Goal, err = CheckGoal(rest)
	return r, true, err
}

// BotBrief is the first turn of a team a trusted bot started: the bot's
// request, marked as a bot's, and what the team does with its result.
func BotBrief(botID, channelID, goal string) string {
	return fmt.Sprintf("[A request from the bot <@%s> (not a person), posted in <#%s>; this team reports back to it]\n\n"+
		"Work on your goal: %s\n\nWhen you have the result the bot needs, send it with report_back, then reply here.",
		botID, channelID, goal)
}
