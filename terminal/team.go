package terminal

import (
	"context"
	"fmt"
	"strings"

	"github.com/callonbot/callon/bot/render"
	"github.com/callonbot/callon/master"
)

// ErrNotTaken is what Say returns for a message the team recorded but
// will not answer (a limit: too many active teams to wake it, say); the
// team's notice says which, the first time.
var ErrNotTaken = &master.Error{Code: master.ELimit,
	Message: "The team did not take that message: a limit stands in the way (its notice says which). Nothing will answer it."}

// Team is what the person at the terminal does with their team; callon
// chat implements it with the core's services.
type Team interface {
	// Say sends the team a message; ErrNotTaken when the team will not
	// answer it.
	Say(ctx context.Context, text string) error
	// Show is /team: who is on the team and what they are doing.
	Show(ctx context.Context) (master.TeamView, error)
	// Replan is /replan: the notice the team then posts says what changed.
	Replan(ctx context.Context, change string) error
	// Dissolve ends the team; its summary follows as a message.
	Dissolve(ctx context.Context) error
	// Decide approves or denies request id of this team.
	Decide(ctx context.Context, id int64, approve bool) (master.Approval, error)
	// Memory is /memory: the channel's notes ("" or "show"), "forget N"
	// or "clear"; it returns what to show.
	Memory(ctx context.Context, arg string) (string, error)
}

// Outcome is how a chat ended.
type Outcome int

// Outcomes.
const (
	// Left: the team is left as it is, for callon chat --resume.
	Left Outcome = iota
	// Dissolved: the team was dissolved.
	Dissolved
)

// Help lists the commands of a chat.
const Help = "Commands: /team shows the team, /replan [what to change] reorganizes it, /approve N and /deny N decide a request, " +
	"/memory [forget N | clear] shows or edits the notes teams keep, " +
	"/dissolve ends the team, /quit leaves it for later (callon chat --resume). Anything else is a message for the team."

// command is a line that starts with "/".
type command struct {
	name, arg string
}

func parseCommand(line string) (command, bool) {
	if !strings.HasPrefix(line, "/") {
		return command{}, false
	}
	name, arg, _ := strings.Cut(line[1:], " ")
	return command{name: strings.ToLower(name), arg: strings.TrimSpace(arg)}, true
}

// requestID reads the N of /approve N.
func requestID(arg string) (int64, error) {
	var id int64
	if _, err := fmt.Sscan(arg, &id); err != nil || id <= 0 {
		return 0, fmt.Errorf("give the number of the request, like /approve 3")
	}
	return id, nil
}

// TeamText renders /team as text: Discord's embed (render.Team) as
// Markdown, which the terminal translates like every text of the team.
func TeamText(v master.TeamView) string {
	e := render.Team(v)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n%s\n", e.Title, e.Description)
	for _, f := range e.Fields {
		fmt.Fprintf(&b, "\n**%s**\n%s\n", f.Name, f.Value)
	}
	if e.Footer != "" {
		fmt.Fprintf(&b, "\n-# %s\n", e.Footer)
	}
	return strings.TrimSpace(b.String())
}
