package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/callonbot/callon/master"
)

// maxCallsPerStep bounds the calls of tools one model answer may make;
// the rest are answered with an error.
const maxCallsPerStep = 16

// errPaused ends a task's work when it waits for a person's approval:
// the store has recorded everything, nothing else is written.
var errPaused = errors.New("paused for approval")

// interruptedCall is what a model reads for a call that was being made
// when the worker making it stopped.
const interruptedCall = "This call was interrupted: the worker making it stopped before it returned. " +
	"It may or may not have taken effect; check before making it again."

// offer returns the role's own tools, if any, and the notice about those
// unavailable.
func (p *Pool) offer(ctx context.Context, guild string, allowed []string) ([]master.Tool, string) {
	if p.cfg.Tools == nil || len(allowed) == 0 {
		return nil, ""
	}
	return p.cfg.Tools.Offer(ctx, guild, allowed)
}

// callIDs gives every tool call of an answer an id of its own: the
// conversation pairs each call with its result by id, and some servers
// send none.
func callIDs(calls []master.ToolCall, step int) {
	seen := map[string]bool{}
	for i := range calls {
		if calls[i].ID == "" || seen[calls[i].ID] {
			calls[i].ID = "call_" + strconv.Itoa(step) + "_" + strconv.Itoa(i)
		}
		seen[calls[i].ID] = true
	}
}

// replayed rebuilds the part of a conversation that earlier attempts of
// the task recorded: each model answer's calls, then their results. Calls
// left without a result are finished first (made, refused, or paused
// for an approval). It returns the messages and the number of model
// calls used so far.
func (p *Pool) replayed(ctx context.Context, r *running, in TaskInput, recorded []master.CallRecord, log *slog.Logger) ([]master.Message, int, error) {
	var msgs []master.Message
	steps := 0
	for i := 0; i < len(recorded); {
		j := i
		for j < len(recorded) && recorded[j].Step == recorded[i].Step {
			j++
		}
		batch := recorded[i:j]
		calls := make([]master.ToolCall, len(batch))
		for k, c := range batch {
			calls[k] = master.ToolCall{ID: c.CallID, Name: c.Name, Arguments: c.Args}
		}
		msgs = append(msgs, master.Message{Role: master.RoleAssistant, ToolCalls: calls})
		results, err := p.finishCalls(ctx, r, in, batch, log)
		if err != nil {
			return nil, 0, err
		}
		msgs = append(msgs, results...)
		steps = batch[0].Step + 1
		i = j
	}
	return msgs, steps, nil
}

// plan records the calls of one model answer, before any is made.
func (p *Pool) plan(ctx context.Context, r *running, step int, calls []master.ToolCall) ([]master.CallRecord, error) {
	planned := make([]master.PlannedCall, len(calls))
	for i, c := range calls {
		planned[i] = master.PlannedCall{CallID: c.ID, Name: c.Name, Args: c.Arguments}
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	recs, err := p.store.PlanToolCalls(sctx, r.task.ID, r.task.Attempt, step, planned)
	return recs, p.storeErr(r, "plan tool calls", err)
}

// storeErr makes a failed write of a call's record an error for the
// task: stale stops it (it is no longer ours); anything else fails it
// rather than make a call whose record might be lost.
func (p *Pool) storeErr(r *running, what string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, master.ErrStale):
		r.cancel(fmt.Errorf("%s: %w", what, err))
		return err
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

// finishCalls finishes recorded calls in order and returns their results
// as the model reads them; errPaused when one waits for an approval.
func (p *Pool) finishCalls(ctx context.Context, r *running, in TaskInput, calls []master.CallRecord, log *slog.Logger) ([]master.Message, error) {
	out := make([]master.Message, 0, len(calls))
	for _, c := range calls {
		text, err := p.finishCall(ctx, r, in, c, log)
		if err != nil {
			return nil, err
		}
		out = append(out, toolReply(c.CallID, text))
	}
	return out, nil
}

// finishCall gives a recorded call its result. A done call's result is
// replayed; a started one was interrupted and is not made again; a
// decision a person made is honoured; a call that needs a decision not
// yet asked for pauses the task (errPaused); any other is made now.
func (p *Pool) finishCall(ctx context.Context, r *running, in TaskInput, c master.CallRecord, log *slog.Logger) (string, error) {
	if c.State == master.CallDone {
		return c.Result, nil
	}
	var res master.ToolResult
	switch {
	case c.State == master.CallStarted:
		res = master.ToolResult{Text: interruptedCall, IsError: true}
	case p.cfg.Tools == nil || !p.cfg.Tools.Allows(in.GuildID, in.Role.Tools, c.Name):
		res = master.ToolResult{Text: fmt.Sprintf("%s is not one of your tools: the call was not made.", c.Name), IsError: true}
	case master.CheckArgs(c.Args) != nil:
		// Refused before anyone is asked, or anything made: arguments a
		// person and the tool could read two ways.
		res = master.ToolResult{Text: "Not made: " + master.CheckArgs(c.Args).Error() + ".", IsError: true}
	case c.Approval == master.ApprovalApproved:
		var err error
		if res, err = p.makeCall(ctx, r, in, c, log); err != nil {
			return "", err
		}
	case c.Approval != "" && c.Approval != master.ApprovalPending:
		res = master.ToolResult{Text: master.Denial(c.Approval), IsError: true}
	case c.Approval == master.ApprovalPending || p.cfg.Tools.NeedsApproval(in.Role.Tools, c.Name, c.Args):
		return "", p.pause(ctx, r, c, log)
	default:
		var err error
		if res, err = p.makeCall(ctx, r, in, c, log); err != nil {
			return "", err
		}
	}
	// Recorded even when the task's context has ended (its deadline):
	// the call was made, and the task is ours until its outcome is.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	if err := p.storeErr(r, "record tool call", p.store.RecordToolCall(wctx, r.task.ID, r.task.Attempt, c.Seq, res)); err != nil {
		return "", err
	}
	log.Debug("tool called", "tool", c.Name, "seq", c.Seq, "error", res.IsError, "duration", res.Duration, "size", res.Size)
	return res.Text, nil
}

// makeCall marks the call started, then makes it.
func (p *Pool) makeCall(ctx context.Context, r *running, in TaskInput, c master.CallRecord, log *slog.Logger) (master.ToolResult, error) {
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	err := p.storeErr(r, "start tool call", p.store.StartToolCall(sctx, r.task.ID, r.task.Attempt, c.Seq))
	cancel()
	if err != nil {
		return master.ToolResult{}, err
	}
	return p.cfg.Tools.Call(ctx, in.GuildID, c.Name, c.Args), nil
}

// ask is the request for a person's approval of call c of task.
func (p *Pool) ask(task master.Task, c master.CallRecord) master.ApprovalAsk {
	ask := master.ApprovalAsk{Approvers: p.cfg.Tools.Approvers(c.Name), Timeout: p.cfg.ApprovalTimeout}
	a := master.Approval{TaskID: task.ID, Seq: c.Seq, Role: task.Role, Tool: c.Name, Args: c.Args, Approvers: ask.Approvers,
		State: master.ApprovalPending, ExpiresAt: time.Now().Add(ask.Timeout)}
	if p.cfg.Ask == nil {
		ask.Text = fmt.Sprintf("%s asks to call %s.", a.Role, master.ToolName(a.Tool))
		return ask
	}
	ask.Text, ask.File = p.cfg.Ask(a)
	return ask
}

// pause asks for a person's approval of call c and pauses the task; it
// returns errPaused once the store has done both.
func (p *Pool) pause(ctx context.Context, r *running, c master.CallRecord, log *slog.Logger) error {
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	id, err := p.store.PauseForApproval(sctx, r.task.ID, r.task.Attempt, c.Seq, p.ask(r.task, c))
	cancel()
	if err := p.storeErr(r, "pause for approval", err); err != nil {
		return err
	}
	log.Info("task waits for approval", "tool", c.Name, "seq", c.Seq, "approval_id", id)
	return errPaused
}
