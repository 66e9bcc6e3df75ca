package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/callonbot/callon/master"
)

// ToolName is the demo's tool as the model calls it: the tool roll_dice
// of the pseudo-server demo.
const ToolName = "demo__roll_dice"

// toolEntry is the tool as a role's tools list names it.
const toolEntry = "demo.roll_dice"

// Roles is the demo's team.
func Roles() []master.Role {
	return []master.Role{
		{Name: "researcher", Description: "Finds what matters to customers.", Prompt: "You research."},
		{Name: "planner", Description: "Turns a goal into a timeline.", Prompt: "You plan."},
		{Name: "writer", Description: "Writes short, clear copy.", Prompt: "You write."},
		{Name: "engineer", Description: "Runs the demo tool (dice).", Prompt: "You use tools.", Tools: []string{toolEntry}},
	}
}

// Toolbox is the demo's tools for the worker pool: one tool, dice, that
// needs a person's approval and touches nothing outside the process.
type Toolbox struct {
	// Roll returns a number in [1, sides]; nil rolls at random.
	Roll func(sides int) int
}

var diceSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"dice":{"type":"integer","minimum":1,"maximum":10,"description":"how many dice"},` +
	`"sides":{"type":"integer","minimum":2,"maximum":100,"description":"sides of each die"}},"required":["dice"]}`)

// Offer offers the dice to a role whose list names them.
func (t Toolbox) Offer(_ context.Context, guild string, allowed []string) ([]master.Tool, string) {
	if !t.Allows(guild, allowed, ToolName) {
		return nil, ""
	}
	return []master.Tool{{Name: ToolName, Description: "Roll dice (a demo tool: it touches nothing on this machine).", Parameters: diceSchema}}, ""
}

// Allows lets a role call the dice when its list names them.
func (Toolbox) Allows(_ string, allowed []string, name string) bool {
	return name == ToolName && (slices.Contains(allowed, toolEntry) || slices.Contains(allowed, "demo.*"))
}

// NeedsApproval says every roll waits for a person: the demo shows how
// approvals work.
func (Toolbox) NeedsApproval(_ []string, name, _ string) bool { return name == ToolName }

// Approvers are none: the person at the terminal, the team's owner,
// decides.
func (Toolbox) Approvers(string) []string { return nil }

// Call rolls the dice.
func (t Toolbox) Call(_ context.Context, _, name, args string) master.ToolResult {
	start := time.Now()
	result := func(text string, isErr bool) master.ToolResult {
		return master.ToolResult{Text: text, IsError: isErr, Duration: time.Since(start), Size: len(text)}
	}
	if name != ToolName {
		return result("unknown tool "+name, true)
	}
	var a struct {
		Dice  int `json:"dice"`
		Sides int `json:"sides"`
	}
	if err := json.Unmarshal([]byte(args), &a); err != nil {
		return result("the arguments are not valid JSON: "+err.Error(), true)
	}
	if a.Sides == 0 {
		a.Sides = 6
	}
	if a.Dice < 1 || a.Dice > 10 || a.Sides < 2 || a.Sides > 100 {
		return result("dice must be 1 to 10, sides 2 to 100", true)
	}
	roll := t.Roll
	if roll == nil {
		roll = func(sides int) int { return 1 + rand.IntN(sides) }
	}
	faces := make([]string, a.Dice)
	total := 0
	for i := range faces {
		n := roll(a.Sides)
		total += n
		faces[i] = fmt.Sprint(n)
	}
	return result(fmt.Sprintf("🎲 %s = %d", strings.Join(faces, " + "), total), false)
}
