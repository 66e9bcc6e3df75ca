package eval

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/callonbot/callon/master"
)

// Recording is a team as its rows hold it, for replay: read by the
// caller (read-only), handed over whole.
type Recording struct {
	Session master.Session
	Turns   []RecordedTurn
}

// RecordedTurn is one answered turn: the message, what the master read
// for it (the history before it, its files, its tasks of every round
// with their results) and the answer the team posted.
type RecordedTurn struct {
	Turn   master.Turn
	Reads  master.TurnReads
	Answer string
	Asked  bool // the answer was a question
}

// Side is one master's decisions on a turn, as replay compares them.
type Side struct {
	// Steps are the decisions in order: "delegate" with its roles,
	// "answer_worker", "replan", then how the turn ended ("reply",
	// "ask_user", "apology", or "stopped" where no recording follows).
	Steps []Step `json:"steps"`
	// Length is the answer's length in characters.
	Length int `json:"length"`
}

// Step is one decision of a Side.
type Step struct {
	Action string   `json:"action"`
	Roles  []string `json:"roles,omitempty"` // delegate: its tasks' roles, in order
}

// TurnReplay is one turn, recorded and replayed side by side.
type TurnReplay struct {
	Turn     int64         `json:"turn"`
	Message  string        `json:"message"`
	Recorded Side          `json:"recorded"`
	New      Side          `json:"new"`
	Changed  bool          `json:"changed"`
	Question string        `json:"question,omitempty"` // the new master's question, when it asked one
	Answer   string        `json:"answer,omitempty"`   // the new master's answer
	Calls    int           `json:"calls"`
	Tokens   int64         `json:"tokens"`
	Latency  time.Duration `json:"latency_ns"`
	Why      string        `json:"why,omitempty"` // a failed model call, the run's bound
}

// ReplayReport is a replay's outcome.
type ReplayReport struct {
	Session  int64         `json:"session"`
	Model    string        `json:"model"`
	Turns    []TurnReplay  `json:"turns"`
	Changed  int           `json:"changed"`
	Calls    int           `json:"calls"`
	Tokens   int64         `json:"tokens"`
	Duration time.Duration `json:"duration_ns"`
}

// ReplayBound is the most a replay may call the model, and the tokens
// after which it stops.
func ReplayBound(cfg Config, rec Recording) (calls int, tokens int64) {
	cfg = cfg.withDefaults()
	return len(rec.Turns) * cfg.Limits.MaxCalls, cfg.MaxTokens
}

// Replay re-runs the master's decision on each recorded turn with the
// model (and instructions) of cfg, through callon's own orchestrator:
// each turn's context is the recorded one (the history as the team
// answered it then), and when the new master delegates the roles the
// recorded master did in that round, it is given the recorded results;
// when it goes elsewhere, the turn stops there (no worker is called).
// Each turn goes to progress (which may be nil) as it ends.
func Replay(ctx context.Context, cfg Config, model master.LLM, rec Recording, progress func(TurnReplay)) ReplayReport {
	cfg = cfg.withDefaults()
	calls, _ := ReplayBound(cfg, rec)
	m := newMeter(model, calls, cfg.MaxTokens)
	rep := ReplayReport{Session: rec.Session.ID, Model: cfg.Model}
	start := time.Now()
	for _, rt := range rec.Turns {
		tr := TurnReplay{Turn: rt.Turn.ID, Message: rt.Turn.Content, Recorded: recordedSide(rt)}
		switch {
		case ctx.Err() != nil:
			tr.Why = "not run: stopped"
		case overBudget(m):
			tr.Why = "not run: the run's token bound is spent"
		default:
			replayTurn(ctx, cfg, m, rt, &tr)
		}
		tr.Changed = tr.Why == "" && !sameSteps(tr.Recorded.Steps, tr.New.Steps)
		if tr.Changed {
			rep.Changed++
		}
		rep.Turns = append(rep.Turns, tr)
		if progress != nil {
			progress(tr)
		}
	}
	rep.Duration = time.Since(start)
	rep.Calls, rep.Tokens = m.totals()
	return rep
}

func replayTurn(ctx context.Context, cfg Config, m *meter, rt RecordedTurn, tr *TurnReplay) {
	w := &world{meter: m, nextID: 1 << 40, session: rt.Reads.Session, roster: slices.Clone(rt.Reads.Roster),
		history: slices.Clone(rt.Reads.History), atts: slices.Clone(rt.Reads.Attachments)}
	w.session.ID = sessionID
	w.turn = rt.Turn
	w.turn.SessionID, w.turn.Round, w.turn.State = sessionID, 0, master.TurnRunning
	w.turn.MasterCalls, w.turn.MasterFailures, w.turn.NotBefore = 0, 0, time.Time{}
	rounds := map[int][]master.Task{}
	for _, t := range rt.Reads.Tasks {
		rounds[t.Round] = append(rounds[t.Round], t)
	}
	orch := master.NewOrchestrator(masterConfig(cfg, cfg.Limits.MaxCalls, nil, w), w, m, cfg.Logger)
	drive(ctx, orch, w, cfg.Limits.MaxRounds, func(queued []master.Task) bool {
		return replayRound(w, rounds[queued[0].Round], queued)
	})
	calls := m.take()
	tr.Calls = len(calls)
	tr.Tokens, tr.Latency = usageOf(calls)
	tr.Why = callError(calls)
	w.mu.Lock()
	if w.budget {
		tr.Why = "stopped: the run's token bound is spent"
	}
	w.mu.Unlock()
	decisions, end := w.result()
	tr.New = newSide(decisions, end)
	if end != nil && end.Kind == actAsk {
		tr.Question = end.Text
	} else if end != nil {
		tr.Answer = end.Text
	}
}

// replayRound gives the new master's round the recorded results when it
// delegated the same roles as the recorded round; false (and the turn
// stopped) otherwise.
func replayRound(w *world, recorded, queued []master.Task) bool {
	var got, want []string
	for _, t := range queued {
		got = append(got, t.Role)
	}
	for _, t := range recorded {
		want = append(want, t.Role)
	}
	if len(recorded) == 0 || !slices.Equal(sorted(got), sorted(want)) {
		w.stop()
		return false
	}
	used := make([]bool, len(recorded))
	for _, t := range queued {
		for i, r := range recorded {
			if !used[i] && r.Role == t.Role {
				used[i] = true
				var question string
				if r.State == master.TaskNeedInfo && len(r.QA) > 0 {
					question = r.QA[len(r.QA)-1].Question
				}
				w.settle(t.ID, master.Outcome{State: r.State, Result: r.Result, Error: r.Error, Question: question})
				break
			}
		}
	}
	return true
}

// recordedSide is what the recorded master decided: a delegation per
// round of tasks, then the answer the team posted.
func recordedSide(rt RecordedTurn) Side {
	var s Side
	last := 0
	for _, t := range rt.Reads.Tasks {
		if t.Round != last {
			s.Steps = append(s.Steps, Step{Action: actDelegate})
			last = t.Round
		}
		s.Steps[len(s.Steps)-1].Roles = append(s.Steps[len(s.Steps)-1].Roles, t.Role)
	}
	switch {
	case rt.Asked:
		s.Steps = append(s.Steps, Step{Action: actAsk})
	case rt.Answer != "":
		s.Steps = append(s.Steps, Step{Action: actReply})
	}
	s.Length = len([]rune(rt.Answer))
	return s
}

func newSide(ds []Decision, end *Ending) Side {
	var s Side
	for _, d := range ds {
		st := Step{Action: d.Action}
		if d.Action == actDelegate {
			st.Roles = d.Roles
		}
		s.Steps = append(s.Steps, st)
	}
	if end != nil {
		s.Steps = append(s.Steps, Step{Action: end.Kind})
		s.Length = len([]rune(end.Text))
	}
	return s
}

// sameSteps: the same decisions in the same order, each delegation to
// the same roles (in any order).
func sameSteps(a, b []Step) bool {
	return slices.EqualFunc(a, b, func(x, y Step) bool {
		return x.Action == y.Action && slices.Equal(sorted(x.Roles), sorted(y.Roles))
	})
}

// String is the side as a short line: "delegate researcher+writer → reply".
func (s Side) String() string {
	var parts []string
	for _, st := range s.Steps {
		p := st.Action
		if len(st.Roles) > 0 {
			p += " " + strings.Join(st.Roles, "+")
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "(nothing)"
	}
	return strings.Join(parts, " → ")
}
