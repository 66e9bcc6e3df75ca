package workers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/callonbot/callon/master"
)

// end is what the pool writes for a task once its work stops.
type end int

const (
	endComplete end = iota // the outcome
	endRelease             // nothing: the task goes back to the queue (shutdown)
	endDrop                // nothing at all: the task is no longer ours
	endPaused              // nothing more: the task waits for an approval, as recorded
)

// runTask runs one claimed task and writes what it came to. ctx is the
// pool's: the task's own context, r.ctx, derives from it.
//
// free gives the task's slot back: once its outcome is in hand, the slot
// may take the next task while the outcome is being written (the task
// stays running, under its lease, until the write commits), as a job
// queue frees a worker when its job returns.
func (p *Pool) runTask(ctx context.Context, r *running, free func()) {
	log := p.taskLogger(r.task)
	start := time.Now()
	log.Debug("task started")

	out, e := p.work(r, log)

	switch e {
	case endComplete:
		free()
		p.complete(ctx, r.task, out, log, start)
	case endRelease:
		p.release(ctx, r.task, log)
	case endDrop:
		log.Info("task dropped", "reason", context.Cause(r.ctx).Error())
	case endPaused:
		log.Debug("task paused", "duration", time.Since(start).Round(time.Millisecond))
	}
}

// work loads the task's input and runs the conversation under the task's
// deadline. The cause of an interruption decides how the task ends: its
// deadline is a timeout outcome; a stale lease or a cancelled session
// drops it; the pool's shutdown releases it.
func (p *Pool) work(r *running, log *slog.Logger) (master.Outcome, end) {
	t := r.task
	var in TaskInput
	var err error
	if t.Input != nil {
		in = *t.Input // read with the claim
	} else {
		ictx, cancel := context.WithTimeout(r.ctx, storeTimeout)
		in, err = p.store.TaskInput(ictx, t)
		cancel()
	}
	switch {
	case r.ctx.Err() != nil:
		return master.Outcome{}, interrupted(r.ctx)
	case errors.Is(err, master.ErrStale):
		r.cancel(fmt.Errorf("task input: %w", err))
		return master.Outcome{}, endDrop
	case err != nil:
		// The role left the team, the session is gone: nothing to retry.
		// (If the database is down, this write fails too and the lease
		// expires: the task is retried.)
		return master.Outcome{State: master.TaskFailed, Error: err.Error()}, endComplete
	}

	timeout := cmp.Or(max(in.Role.Timeout, 0), p.cfg.TaskTimeout)
	tctx, cancel := context.WithTimeoutCause(r.ctx, timeout, errTaskTimeout)
	defer cancel()
	out, err := p.converse(tctx, r, in, log)
	if err == nil {
		return out, endComplete
	}
	if errors.Is(err, errPaused) {
		return out, endPaused
	}
	if errors.Is(context.Cause(tctx), errTaskTimeout) {
		return master.Outcome{
			State: master.TaskTimeout,
			Error: fmt.Sprintf("timed out after %s", timeout),
			Usage: out.Usage,
		}, endComplete
	}
	return master.Outcome{}, interrupted(tctx)
}

// interrupted is how a task whose context ended, other than by its
// deadline, ends.
func interrupted(ctx context.Context) end {
	cause := context.Cause(ctx)
	if errors.Is(cause, master.ErrStale) || errors.Is(cause, errSessionCancelled) {
		return endDrop
	}
	return endRelease
}

// converse runs the model until it reports, at most MaxSteps calls,
// counting those whose tool calls earlier attempts recorded: their calls
// are replayed, not made again. Each call is charged as it returns (see
// call); the outcome's usage only sums them, for the log. It returns an
// error only when ctx ended, with the usage so far, or errPaused when the
// task waits for a person's approval of a call.
func (p *Pool) converse(ctx context.Context, r *running, in TaskInput, log *slog.Logger) (master.Outcome, error) {
	model := cmp.Or(in.Role.Model, p.cfg.WorkerModel)
	offered, notice := p.offer(ctx, in.GuildID, in.Role.Tools)
	req := master.ChatRequest{
		Model:       model,
		Messages:    messages(r.task, in, p.cfg.Vision != nil && p.cfg.Vision(model), len(offered) > 0, notice),
		Tools:       append(tools(in.Team), offered...),
		ToolChoice:  "auto",
		Temperature: in.Role.Temperature,
		MaxTokens:   in.Role.MaxTokens,
	}
	var usage master.Usage
	// ended says how an error from a step ends the task.
	ended := func(err error) (master.Outcome, error) {
		switch {
		case errors.Is(err, errPaused):
			return master.Outcome{Usage: usage}, errPaused
		case ctx.Err() != nil:
			return master.Outcome{Usage: usage}, ctx.Err()
		default:
			return failed(err.Error(), usage), nil
		}
	}
	// The calls earlier attempts recorded came with the task's input.
	replay, first, err := p.replayed(ctx, r, in, in.Calls, log)
	if err != nil {
		return ended(err)
	}
	req.Messages = append(req.Messages, replay...)

	var last error // the latest validation error
	retried := false
	for step := first; step < p.cfg.MaxSteps; step++ {
		if err := ctx.Err(); err != nil {
			return master.Outcome{Usage: usage}, err
		}
		if step == p.cfg.MaxSteps-1 && len(offered) > 0 && step > 0 {
			req.Messages = append(req.Messages, master.Message{Role: master.RoleUser,
				Content: "This is your last step: call " + ToolReport + " now with what you have."})
		}
		resp, made, err := p.call(ctx, r.task, req, log)
		usage = usage.Add(resp.Usage)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return master.Outcome{Usage: usage}, ctx.Err() // stopped meanwhile: not the budget
		case errors.Is(err, master.ErrBudget):
			log.Info("budget spent; the task stops before its model call", "err", err)
			return failed("stopped: "+err.Error(), usage), nil
		case !made:
			return failed("could not hold the model call's tokens against the budget: "+err.Error(), usage), nil
		default:
			return failed("model error: "+err.Error(), usage), nil
		}
		callIDs(resp.ToolCalls, step)
		// An answer that arrived is used even if the task was stopped
		// meanwhile: a report is not thrown away (a stale one is refused
		// by the store), and anything else ends at the next step's check.
		out, replies, calls, bad := p.answer(ctx, r, in, resp, log)
		if out != nil {
			out.Usage = usage
			return *out, nil
		}
		if bad != nil {
			// One retry per task: the model sees its error once.
			if retried {
				return failed("invalid report: "+bad.Error(), usage), nil
			}
			retried, last = true, bad
		}
		req.Messages = append(req.Messages, replies...)
		if len(calls) > 0 {
			recs, err := p.plan(ctx, r, step, calls)
			if err != nil {
				return ended(err)
			}
			results, err := p.finishCalls(ctx, r, in, recs, log)
			if err != nil {
				return ended(err)
			}
			req.Messages = append(req.Messages, results...)
		}
	}
	msg := fmt.Sprintf("no report after %d model calls", p.cfg.MaxSteps)
	if last != nil {
		msg += "; last error: " + last.Error()
	}
	return failed(msg, usage), nil
}

// call makes one model call through the meter: its worst case is held
// against the session's budgets first (a session past one gets no more
// calls, and its task ends failed, so its round still ends and the
// master, which calls no model either, answers with the budget; a budget
// that cannot be checked stops the task too: no path spends unchecked),
// and it is charged to the session and the task when it returns, whatever
// then becomes of the task. made says whether the model was called.
func (p *Pool) call(ctx context.Context, t master.Task, req master.ChatRequest, log *slog.Logger) (master.ChatResponse, bool, error) {
	h := master.Hold{SessionID: t.SessionID, TaskID: t.ID, Owner: p.cfg.ID, Budget: p.cfg.Budget}
	resp, held, err := p.meter.Chat(ctx, h, req)
	return resp, held.ID != 0, err
}

func failed(msg string, usage master.Usage) master.Outcome {
	return master.Outcome{State: master.TaskFailed, Error: msg, Usage: usage}
}

// answer handles one model answer. It returns the outcome when the answer
// ends the task; otherwise the messages that continue the conversation,
// the calls of the role's own tools to make (whose results follow the
// messages), and the validation error when the answer was a malformed
// report.
func (p *Pool) answer(ctx context.Context, r *running, in TaskInput, resp master.ChatResponse, log *slog.Logger) (*master.Outcome, []master.Message, []master.ToolCall, error) {
	if len(resp.ToolCalls) == 0 {
		// A text-only answer is the result, as if reported done.
		if text := strings.TrimSpace(resp.Content); text != "" {
			return &master.Outcome{State: master.TaskDone, Result: text}, nil, nil, nil
		}
		return nil, []master.Message{{
			Role:    master.RoleUser,
			Content: "Your answer was empty. Call " + ToolReport + " with your result.",
		}}, nil, errors.New("the answer was empty")
	}
	replies := []master.Message{{Role: master.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls}}
	var bad error
	var calls []master.ToolCall
	for _, c := range resp.ToolCalls {
		result := "ok"
		switch c.Name {
		case ToolReport:
			rep, err := parseReport(c.Arguments)
			if err == nil {
				p.metrics.ToolCalled("worker", c.Name, result)
				out := rep.outcome()
				return &out, nil, nil, nil
			}
			if bad == nil {
				bad = err
			}
			result = "invalid"
			replies = append(replies, toolReply(c.ID, "Error: "+err.Error()+". Call "+ToolReport+" again with valid arguments."))
		case ToolHandoff:
			out, err := parseHandoff(c.Arguments, in.Team)
			if err == nil {
				p.metrics.ToolCalled("worker", c.Name, result)
				return &out, nil, nil, nil
			}
			if bad == nil {
				bad = err
			}
			result = "invalid"
			replies = append(replies, toolReply(c.ID, "Error: "+err.Error()+". Call "+ToolHandoff+" again with valid arguments."))
		case ToolProgress:
			pr, err := parseProgress(c.Arguments)
			if err != nil {
				p.metrics.ToolCalled("worker", c.Name, "invalid")
				replies = append(replies, toolReply(c.ID, "Error: "+err.Error()+"."))
				continue
			}
			p.progress(ctx, r, pr, log)
			replies = append(replies, toolReply(c.ID, "noted"))
		default:
			if p.cfg.Tools != nil && p.cfg.Tools.Allows(in.GuildID, in.Role.Tools, c.Name) {
				if len(calls) < maxCallsPerStep {
					calls = append(calls, c)
					p.metrics.ToolCalled("worker", "role_tool", "ok")
				} else {
					p.metrics.ToolCalled("worker", "role_tool", "refused")
					replies = append(replies, toolReply(c.ID, fmt.Sprintf("Error: not made: make at most %d calls at a time.", maxCallsPerStep)))
				}
				continue
			}
			err := fmt.Errorf("there is no tool %q: use %s or %s", c.Name, ToolReport, ToolProgress)
			if bad == nil {
				bad = err
			}
			result = "invalid"
			replies = append(replies, toolReply(c.ID, "Error: "+err.Error()+"."))
		}
		tool := c.Name
		if tool != ToolReport && tool != ToolHandoff && tool != ToolProgress {
			tool = "unknown" // a label must not take what a model makes up
		}
		p.metrics.ToolCalled("worker", tool, result)
	}
	return nil, replies, calls, bad
}

func toolReply(callID, content string) master.Message {
	return master.Message{Role: master.RoleTool, ToolCallID: callID, Content: content}
}

// progress records a PROGRESS signal. A stale answer means the task is
// no longer ours: it is stopped. Other failures only cost the signal.
func (p *Pool) progress(ctx context.Context, r *running, pr progress, log *slog.Logger) {
	pctx, cancel := context.WithTimeout(ctx, storeTimeout)
	err := p.store.Progress(pctx, r.task.ID, r.task.Attempt, pr.percent, pr.note)
	cancel()
	switch {
	case errors.Is(err, master.ErrStale):
		r.cancel(fmt.Errorf("progress: %w", err))
	case err != nil && ctx.Err() == nil:
		log.Warn("progress not recorded", "err", err)
	}
}

// complete writes the outcome, with the outcomes of tasks ending at the
// same time, under a fresh context: the task's own may have ended
// (timeout, shutdown) and the result must still be recorded.
func (p *Pool) complete(ctx context.Context, t master.Task, out master.Outcome, log *slog.Logger, start time.Time) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	err := p.end(wctx, master.Completion{Task: master.TaskRef{ID: t.ID, Attempt: t.Attempt}, Outcome: out, SessionID: t.SessionID})
	switch {
	case errors.Is(err, master.ErrStale):
		log.Debug("task outcome is stale: the task was taken over", "state", out.State)
	case err != nil:
		log.Warn("task outcome not written; its lease will expire", "state", out.State, "err", err)
	default:
		p.metrics.TaskEnded(t.Role, out.State, time.Since(start))
		attrs := []any{"state", out.State, "tokens", out.Usage.Total(), "duration", time.Since(start).Round(time.Millisecond)}
		if out.Error != "" {
			attrs = append(attrs, "error", out.Error)
		}
		log.Info("task ended", attrs...)
	}
}

// release puts the task back in the queue for another process. If that
// fails, the lease expires and the sweeper requeues it: nothing is lost.
func (p *Pool) release(ctx context.Context, t master.Task, log *slog.Logger) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	err := p.store.ReleaseTask(wctx, t.ID, t.Attempt)
	switch {
	case errors.Is(err, master.ErrStale):
		log.Debug("task not released: no longer ours")
	case err != nil:
		log.Warn("task not released; its lease will expire", "err", err)
	default:
		log.Info("task released")
	}
}
