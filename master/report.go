package master

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Hand-back tools: offered only when they apply.
const (
	ToolReportBack = "report_back" // the session has a report_to channel or a callback URL
	ToolDispatch   = "dispatch"    // the deployment enables dispatch
)

// NewReport is a report about to be delivered.
type NewReport struct {
	Summary string
	Final   bool     // sent by /dissolve
	Posted  []string // the message parts if it is posted as a plain message
	Turn    string   // the turn's content if it is injected into a team
	Cap     int      // reports allowed between the two sessions per hour
}

// Report is a delivered report.
type Report struct {
	ID        int64
	Delivery  string // "injected" or "posted"
	ToSession int64  // the team it was injected into
}

// Channel is a channel or thread, as starting a team and report_to see it.
type Channel struct {
	ID       string
	GuildID  string
	Name     string
	Thread   bool
	ParentID string
	// Other says it is neither a text channel nor a thread (a voice
	// channel, a forum, a category): no team works there.
	Other bool
}

// Channels is what starting teams and hand-back need of the platform: finding channels,
// opening threads, and knowing whether the bot may post.
type Channels interface {
	// Resolve finds a channel of the guild from an id, a <#id> mention or
	// a #name; ErrNotFound when there is none.
	Resolve(ctx context.Context, guildID, ref string) (Channel, error)
	// StartThread opens a public thread in a text channel.
	StartThread(ctx context.Context, channelID, name string) (string, error)
	// CanPost returns an error when the bot may not post in the channel.
	CanPost(ctx context.Context, channelID string) error
}

// ReportTexts renders a report both ways it can land: as a plain message
// (a heading naming the goal and linking the thread, then the summary),
// and as the content of a turn injected into the receiving team.
func ReportTexts(from Session, summary string, final bool) (posted []string, turn string) {
	jump := JumpURL(from.GuildID, from.ThreadID)
	kind := "Report"
	if final {
		kind = "Final report"
	}
	head := fmt.Sprintf("📬 **%s from the team working on:** %s\n%s\n\n", kind, Truncate(oneLine(from.Goal, 300), 300), jump)
	if from.RequestedByBot != "" {
		// The bot that asked is woken by its mention (and by nothing else:
		// the message's allowed_mentions lists only it).
		head = "<@" + from.RequestedByBot + "> " + head
	}
	posted = Split(head+strings.TrimSpace(summary), MaxMessageLen)
	if len(posted) > maxReplyParts {
		posted = posted[:maxReplyParts]
	}
	turn = fmt.Sprintf("[%s from another team, in <#%s> (%s), working on: %s]\n\n%s",
		kind, from.ThreadID, jump, oneLine(from.Goal, 300), Truncate(strings.TrimSpace(summary), 6000))
	return posted, turn
}

var reportBackTool = masterTool{
	name:    ToolReportBack,
	offered: func(e decisionEnv) bool { return e.reportTo != "" || e.callback },
	schema: func(e decisionEnv) Tool {
		where := "to the system that started this team through callon's API"
		switch {
		case e.reportTo != "" && e.callback:
			where = fmt.Sprintf("to <#%s>, where this team reports, and to the system that started it through callon's API", e.reportTo)
		case e.reportTo != "":
			where = fmt.Sprintf("to <#%s>, where this team reports", e.reportTo)
		}
		return Tool{
			Name: ToolReportBack,
			Description: "Send a report " + where + ": a self-contained summary of the " +
				"results the requester needs. It does not end the session or your turn; you may report again later.",
			Parameters: schema(object([]string{"summary"}, map[string]any{"summary": map[string]any{"type": "string"}})),
		}
	},
	parse: func(args string, e decisionEnv) (decision, error) {
		if e.reportTo == "" && !e.callback {
			return decision{}, fmt.Errorf("this team reports nowhere: report_back is not available")
		}
		summary, err := textArg(args, "summary", ToolReportBack)
		return decision{text: summary}, err
	},
}

var dispatchTool = masterTool{
	name:    ToolDispatch,
	offered: func(e decisionEnv) bool { return e.dispatch },
	schema: func(decisionEnv) Tool {
		return Tool{
			Name: ToolDispatch,
			Description: "Start a team in another channel of this server to work on a goal; it reports back to this thread " +
				"when it has results, and its report comes to you as a new message.",
			Parameters: schema(object([]string{"channel", "goal"}, map[string]any{
				"channel": map[string]any{"type": "string", "description": "A channel id, a <#id> mention or a #name."},
				"goal":    map[string]any{"type": "string", "description": "A self-contained goal for that team."},
			})),
		}
	},
	parse: func(args string, e decisionEnv) (decision, error) {
		var d decision
		if !e.dispatch {
			return d, fmt.Errorf("dispatch is not available to this team")
		}
		var a struct {
			Channel *string `json:"channel"`
			Goal    *string `json:"goal"`
		}
		if err := DecodeArgs(args, &a); err != nil {
			return d, err
		}
		if a.Channel == nil || strings.TrimSpace(*a.Channel) == "" {
			return d, errors.New("dispatch needs \"channel\": an id, a <#id> mention or a #name")
		}
		if a.Goal == nil {
			return d, errors.New("dispatch needs \"goal\"")
		}
		g, err := CheckGoal(*a.Goal)
		if err != nil {
			return d, err
		}
		d.channel, d.goal = strings.TrimSpace(*a.Channel), g
		return d, nil
	},
}
