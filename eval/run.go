package eval

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/callonbot/callon/master"
)

// Config is how a run measures a model.
type Config struct {
	// Model is the model under test as callon names it ("provider/model"
	// for a named provider).
	Model string
	// Limits are the deployment's, so cases run as its teams would.
	Limits Limits
	// Instructions replace the master's (--prompt-file); "" keeps callon's.
	Instructions string
	// MaxTokens bounds the tokens of the whole run: once spent, no case
	// calls the model again (the call that crosses it may overshoot it).
	MaxTokens int64
	// Vision says the model is given images (no built-in case has any).
	Vision bool
	// Logger receives callon's own log lines while cases run; nil
	// discards them.
	Logger *slog.Logger
}

// Limits are callon's limits that shape a decision or a task.
type Limits struct {
	MaxRounds int // delegation rounds per message (CALLON_MAX_ROUNDS)
	MaxTasks  int // tasks per round (CALLON_MAX_TASKS)
	MaxRoles  int // roles per team (CALLON_MAX_ROLES)
	History   int // recent messages shown verbatim (CALLON_HISTORY)
	// MaxCalls bounds the model calls of one case (a situation may ask
	// for fewer); default DefaultCaseCalls.
	MaxCalls int
	// TaskTimeout bounds a worker case (CALLON_TASK_TIMEOUT).
	TaskTimeout time.Duration
}

// Defaults of a run.
const (
	DefaultCaseCalls = 8
	DefaultMaxTokens = 400_000
)

func (c Config) withDefaults() Config {
	c.Limits.MaxRounds = cmp.Or(c.Limits.MaxRounds, 3)
	c.Limits.MaxTasks = cmp.Or(c.Limits.MaxTasks, 6)
	c.Limits.MaxRoles = cmp.Or(c.Limits.MaxRoles, 8)
	c.Limits.History = cmp.Or(c.Limits.History, 12)
	c.Limits.MaxCalls = cmp.Or(c.Limits.MaxCalls, DefaultCaseCalls)
	c.Limits.TaskTimeout = cmp.Or(c.Limits.TaskTimeout, 5*time.Minute)
	c.MaxTokens = cmp.Or(c.MaxTokens, DefaultMaxTokens)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// caseCalls is the bound on one case's model calls.
func (c Config) caseCalls(s Situation) int {
	if s.MaxCalls > 0 {
		return min(s.MaxCalls, c.Limits.MaxCalls)
	}
	return c.Limits.MaxCalls
}

// Bound is the most a run of the cases may call the model, and the
// tokens after which it stops: what eval states before it starts.
func Bound(cfg Config, cases []Situation) (calls int, tokens int64) {
	cfg = cfg.withDefaults()
	for _, s := range cases {
		calls += cfg.caseCalls(s)
	}
	return calls, cfg.MaxTokens
}

// Result is one case's outcome.
type Result struct {
	Case  string `json:"case"`
	Tests string `json:"tests"`
	Pass  bool   `json:"pass"`
	// Why are the failed checks, first the one that matters most; empty
	// when it passed.
	Why      []string      `json:"why,omitempty"`
	Latency  time.Duration `json:"latency_ns"` // the model calls' time
	Tokens   int64         `json:"tokens"`
	Calls    int           `json:"calls"`
	Dialects []string      `json:"dialects"` // how its calls were written: native, tags, json, fenced, call-line, text
	// Skipped says why the case did not run (the run's bounds); it then
	// counts as failed.
	Skipped string `json:"skipped,omitempty"`

	// What the model decided, for people and CI logs.
	Decisions []Decision `json:"decisions,omitempty"`
	End       *Ending    `json:"end,omitempty"`
	Outcome   *WorkerEnd `json:"outcome,omitempty"` // a worker case's
}

// Report is a run's outcome.
type Report struct {
	Model   string   `json:"model"`
	For     string   `json:"for"` // master or worker
	Results []Result `json:"results"`
	Passed  int      `json:"passed"`
	Total   int      `json:"total"`
	// Score is Passed/Total, 0 to 1.
	Score    float64        `json:"score"`
	Calls    int            `json:"calls"`
	Tokens   int64          `json:"tokens"`
	Duration time.Duration  `json:"duration_ns"`
	Dialects map[string]int `json:"dialects"` // cases that used each way of writing calls
	// Probe is what the one-call probe before the cases found (callon
	// eval runs llm.ProbeTools first); "" when none ran.
	Probe string `json:"probe,omitempty"`
}

// Run measures model on the cases of one kind (master or worker), one
// after another, within Bound; each result goes to progress (which may
// be nil) as it comes. Nothing it does leaves the process but the model
// calls: each case is a team in memory, decided by callon's own master
// (or worker) code.
func Run(ctx context.Context, cfg Config, model master.LLM, who string, cases []Situation, progress func(Result)) Report {
	cfg = cfg.withDefaults()
	calls, _ := Bound(cfg, cases)
	m := newMeter(model, calls, cfg.MaxTokens)
	rep := Report{Model: cfg.Model, For: who, Dialects: map[string]int{}}
	start := time.Now()
	for _, s := range cases {
		var r Result
		switch {
		case ctx.Err() != nil:
			r = Result{Case: s.Name, Tests: s.Tests, Skipped: "stopped"}
		case overBudget(m):
			r = Result{Case: s.Name, Tests: s.Tests, Skipped: "the run's token bound is spent"}
		case s.For == ForWorker:
			r = runWorker(ctx, cfg, m, s)
		default:
			r = runMaster(ctx, cfg, m, s)
		}
		if r.Skipped != "" {
			r.Why = []string{"not run: " + r.Skipped}
		}
		r.Pass = len(r.Why) == 0
		rep.add(r)
		if progress != nil {
			progress(r)
		}
	}
	rep.Duration = time.Since(start)
	rep.Calls, rep.Tokens = m.totals()
	return rep
}

func overBudget(m *meter) bool {
	_, _, over := m.spent()
	return over
}

func (r *Report) add(res Result) {
	r.Results = append(r.Results, res)
	r.Total++
	if res.Pass {
		r.Passed++
	}
	r.Score = float64(r.Passed) / float64(r.Total)
	for _, d := range res.Dialects {
		r.Dialects[d]++
	}
}

// measured fills a result's figures from the case's calls.
func measured(r *Result, calls []call) {
	r.Calls = len(calls)
	r.Tokens, r.Latency = usageOf(calls)
	r.Dialects = dialects(calls)
}
