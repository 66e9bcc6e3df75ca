// Package bench is `callon bench`: it measures callon's own cost, in one
// process against the project's fakes (bot/discordtest, llm/llmfake) and
// a Postgres database of its own, and reports each figure with the
// number of samples behind it. What it measures: the turn overhead (a
// reply's latency minus the model's own time) of a direct answer, of
// parallel turns and of a chain, with the Discord REST calls and Postgres
// statements each costs; task pickup and burn-down through the real
// worker pool; the memory and goroutines of many sessions; the master's
// prompt as a session grows; recovery after a process is killed, after
// an outage of Discord's message posts, and what a stop does to work
// callon acknowledged. Stages with a target print it beside the figure.
//
// Figures belong in docs/performance.md and in this report, never in timed assertions:
// the smoke test checks that every stage runs and reports samples.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/callonbot/callon/store"
)

// Sizes sets how much each stage does.
type Sizes struct {
	// Turns is how many turns of each kind are measured (after a warm-up).
	Turns int `json:"turns"`
	// ModelLatency is how long the fake model takes to answer each call.
	ModelLatency time.Duration `json:"model_latency_ns"`
	// ContextTurns is how many turns the context-growth session runs.
	ContextTurns int `json:"context_turns"`
	// PickupTasks is how many tasks the pickup stage enqueues, one at a
	// time at PickupRate per second.
	PickupTasks int `json:"pickup_tasks"`
	PickupRate  int `json:"pickup_rate"`
	// BurnTasks is how many no-op tasks the burn-down stage runs, through
	// a pool of BurnSlots slots (config.DefaultWorkerSlots when 0).
	BurnTasks int `json:"burn_tasks"`
	BurnSlots int `json:"burn_slots,omitempty"`
	// BurnTeams is how many teams the burn-down's tasks are spread over,
	// in rounds of at most 25 (1 when 0).
	BurnTeams int `json:"burn_teams,omitempty"`
	// ActiveSessions each have a turn in flight at once; DormantSessions
	// are active teams with nothing to do.
	ActiveSessions  int `json:"active_sessions"`
	DormantSessions int `json:"dormant_sessions"`
	// Kills is how many simulated process deaths the recovery stage has;
	// RecoveryLatency is how long each model call takes there.
	Kills           int           `json:"kills"`
	RecoveryLatency time.Duration `json:"recovery_latency_ns"`
	// Outages are the lengths of the outages of Discord's message posts
	// the outage stage measures the recovery from, each in a world of its
	// own with OutageTeams teams, at once.
	Outages     []time.Duration `json:"outages_ns"`
	OutageTeams int             `json:"outage_teams"`
	// Shutdowns is how many times the shutdown stage stops callon at the
	// instant its acknowledgements of a click and a form went out.
	Shutdowns int `json:"shutdowns"`
}

// DefaultSizes are the sizes of a default run: a few minutes on two cores.
func DefaultSizes() Sizes {
	return Sizes{Turns: 30, ContextTurns: 100, PickupTasks: 1000, PickupRate: 200, BurnTasks: 20000, BurnTeams: 100,
		ActiveSessions: 1000, DormantSessions: 10000, Kills: 10, RecoveryLatency: time.Second,
		Outages: []time.Duration{90 * time.Second, 10 * time.Minute}, OutageTeams: 10, Shutdowns: 5}
}

// QuickSizes are small sizes, for the smoke test: every stage runs and
// reports samples in a few seconds.
func QuickSizes() Sizes {
	return Sizes{Turns: 2, ContextTurns: 6, PickupTasks: 10, PickupRate: 200, BurnTasks: 50, BurnTeams: 2,
		ActiveSessions: 5, DormantSessions: 20, Kills: 1, RecoveryLatency: 100 * time.Millisecond,
		Outages: []time.Duration{2 * time.Second}, OutageTeams: 2, Shutdowns: 1}
}

// Deps is what the bench needs from the program that runs it.
type Deps struct {
	// DatabaseURL reaches a Postgres server whose user may create
	// databases; each world gets a database of its own, dropped after.
	DatabaseURL string
	// Start runs callon (bot, master, workers) in this process with env as
	// its whole environment until ctx ends, its store opened with opts
	// (the bench counts and lists its statements with them).
	Start func(ctx context.Context, env map[string]string, opts ...store.Option) error
	// Command returns a command that runs callon (bot, master, workers)
	// as a process of its own with env as its environment.
	Command func(env map[string]string) *exec.Cmd
	// Progress receives a line as each stage starts; nil discards them.
	Progress io.Writer
	// Statements, when set, makes the turns stage list the statements of
	// each kind of turn (per turn, by text) in its report.
	Statements bool
}

// Stages lists the stage names in the order they run; Run's only picks
// some of them.
var Stages = []string{"turns", "presence", "context", "pickup", "burndown", "scale", "recovery", "outage", "shutdown"}

// Report is what a run measured.
type Report struct {
	Machine Machine       `json:"machine"`
	Sizes   Sizes         `json:"sizes"`
	Stages  []StageResult `json:"stages"`
	// Took is how long the whole run took.
	Took Millis `json:"took_ms"`
}

// Machine describes where the figures were taken.
type Machine struct {
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUs      int    `json:"cpus"`
}

// StageResult is one line of the report: a latency distribution when the
// stage measures one, and named values.
type StageResult struct {
	Name string `json:"name"`
	// What says in words what was measured.
	What string `json:"what"`
	// Samples is how many measurements the figures come from.
	Samples int `json:"samples"`
	// Latency is set when the stage measures a latency.
	Latency *Dist `json:"latency_ms,omitempty"`
	// Values are the stage's other figures, each named with its unit.
	Values []Value `json:"values,omitempty"`
	// Target is the figure the stage is held to, in words ("p50 ≤ 1 s");
	// Met says whether this run met it.
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
	// Statements lists what the stage sent to Postgres, per sample, by
	// statement (with --statements).
	Statements []Statement `json:"statements,omitempty"`
}

// Statement is one statement's text (its first line or so) and how many
// times a sample sent it.
type Statement struct {
	SQL     string  `json:"sql"`
	PerTurn float64 `json:"per_sample"`
}

// target sets the stage's target and whether it was met.
func (s StageResult) target(what string, met bool) StageResult {
	s.Target, s.Met = what, &met
	return s
}

// Value is one named figure.
type Value struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// Dist is a latency distribution, in milliseconds.
type Dist struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Millis is a duration shown in milliseconds.
type Millis float64

// dist summarises samples (nearest-rank percentiles).
func dist(samples []time.Duration) *Dist {
	if len(samples) == 0 {
		return nil
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	at := func(p float64) float64 {
		i := int(float64(len(s))*p+0.999999) - 1
		i = min(max(i, 0), len(s)-1)
		return ms(s[i])
	}
	return &Dist{P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Run runs the stages named in only (every stage when only is empty)
// and returns what they measured. A stage that fails ends the run with
// its error; the report holds the stages before it.
func Run(ctx context.Context, deps Deps, sizes Sizes, only []string) (*Report, error) {
	if deps.Progress == nil {
		deps.Progress = io.Discard
	}
	for _, name := range only {
		if !slices.Contains(Stages, name) {
			return nil, fmt.Errorf("no stage %q (stages: %s)", name, strings.Join(Stages, ", "))
		}
	}
	began := time.Now()
	rep := &Report{Machine: Machine{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}, Sizes: sizes}
	b := &bench{deps: deps, sizes: sizes}
	runs := map[string]func(context.Context) ([]StageResult, error){
		"turns": b.turns, "presence": b.presence, "context": b.contextGrowth, "pickup": b.pickup, "burndown": b.burndown,
		"scale": b.scale, "recovery": b.recovery, "outage": b.outages, "shutdown": b.shutdown,
	}
	for _, name := range Stages {
		if len(only) > 0 && !slices.Contains(only, name) {
			continue
		}
		fmt.Fprintf(deps.Progress, "bench: %s…\n", name)
		res, err := guard(func() ([]StageResult, error) { return runs[name](ctx) })
		if err != nil {
			rep.Took = Millis(ms(time.Since(began)))
			return rep, fmt.Errorf("bench %s: %w", name, err)
		}
		rep.Stages = append(rep.Stages, res...)
	}
	rep.Took = Millis(ms(time.Since(began)))
	return rep, nil
}

// bench holds a run's settings.
type bench struct {
	deps  Deps
	sizes Sizes
}

// guard runs f, turning a fake's fatal failure (a panic of fatal) into
// an error.
func guard(f func() ([]StageResult, error)) (res []StageResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			var fe fatal
			if e, ok := r.(fatal); ok {
				fe = e
			} else {
				panic(r)
			}
			err = errors.New(string(fe))
		}
	}()
	return f()
}

// WriteJSON writes the report as one indented JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report as a table for people.
func (r *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "callon bench · %s %s/%s · %d CPUs · model latency %s · took %.1f s\n\n",
		r.Machine.GoVersion, r.Machine.OS, r.Machine.Arch, r.Machine.CPUs, r.Sizes.ModelLatency, float64(r.Took)/1000)
	fmt.Fprintf(&b, "%-18s %7s %9s %9s %9s  %s\n", "stage", "samples", "p50 ms", "p95 ms", "p99 ms", "other")
	for _, s := range r.Stages {
		p50, p95, p99 := "", "", ""
		if s.Latency != nil {
			p50, p95, p99 = num(s.Latency.P50), num(s.Latency.P95), num(s.Latency.P99)
		}
		var vals []string
		for _, v := range s.Values {
			vals = append(vals, fmt.Sprintf("%s %s %s", v.Name, num(v.Value), v.Unit))
		}
		if s.Target != "" {
			verdict := "met"
			if s.Met != nil && !*s.Met {
				verdict = "NOT met"
			}
			vals = append(vals, fmt.Sprintf("target %s: %s", s.Target, verdict))
		}
		fmt.Fprintf(&b, "%-18s %7d %9s %9s %9s  %s\n", s.Name, s.Samples, p50, p95, p99, strings.Join(vals, " · "))
	}
	b.WriteString("\n")
	for _, s := range r.Stages {
		fmt.Fprintf(&b, "%-18s %s\n", s.Name, s.What)
	}
	for _, s := range r.Stages {
		if len(s.Statements) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s: statements per sample\n", s.Name)
		for _, st := range s.Statements {
			fmt.Fprintf(&b, "  %6s  %s\n", num(st.PerTurn), st.SQL)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// num formats a figure with as many decimals as it deserves.
func num(v float64) string {
	switch {
	case v >= 100 || v == float64(int64(v)):
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
