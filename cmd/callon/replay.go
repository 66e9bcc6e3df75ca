package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/eval"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/store"
)

// replayCmd re-runs a recorded team's master decisions, turn by turn,
// with another model or instructions, feeding it the recorded workers'
// results: no worker, no Discord, and no write to the database (it
// connects read-only and reads everything before the first model call).
func replayCmd(ctx context.Context, cfg config.Config, args []string, stdin io.Reader, stdout, stderr, usageOut io.Writer) error {
	var (
		thread, masterModel, promptFile string
		session, maxTokens              int64
		asJSON, yes                     bool
	)
	ok, err := parseCommand("replay", "re-run a recorded team's master decisions with another model or prompt; writes nothing",
		args, usageOut, func(fs *flag.FlagSet) {
			fs.Int64Var(&session, "session", 0, "the session to replay")
			fs.StringVar(&thread, "thread", "", "the Discord thread of the team to replay (its latest session)")
			fs.StringVar(&masterModel, "master-model", cfg.MasterModel, "the master's model to replay with (provider/model for a named provider)")
			fs.StringVar(&promptFile, "prompt-file", "", "master instructions to replay with instead of callon's (as CALLON_MASTER_PROMPT_FILE)")
			fs.Int64Var(&maxTokens, "max-tokens", eval.DefaultMaxTokens, "stop once the replay has used this many tokens")
			fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
			fs.BoolVar(&yes, "yes", false, "do not ask before calling the model")
		})
	if !ok {
		return err
	}
	if (thread == "") == (session == 0) {
		return errors.New("give exactly one of --thread ID or --session ID")
	}
	if maxTokens <= 0 {
		return errors.New("--max-tokens must be positive")
	}
	if err := cfg.Validate(config.NeedDatabase | config.NeedLLM); err != nil {
		return configError(err)
	}
	ecfg := eval.Config{Model: masterModel, MaxTokens: maxTokens, Vision: cfg.Attachments.Vision(masterModel),
		Limits: evalLimits(cfg), Instructions: cfg.MasterPrompt, Logger: slog.New(slog.DiscardHandler)}
	if promptFile != "" {
		if ecfg.Instructions, err = config.ReadMasterPrompt(promptFile); err != nil {
			return fmt.Errorf("--prompt-file: %w", err)
		}
	}
	rec, note, err := readRecording(ctx, cfg, session, thread, ecfg)
	if err != nil {
		return err
	}
	calls, tokens := eval.ReplayBound(ecfg, rec)
	bound := fmt.Sprintf("callon replay re-runs %d turn(s) of session %d with %s: at most %d model calls, stopping once %d tokens are spent; nothing is written.",
		len(rec.Turns), rec.Session.ID, masterModel, calls, tokens)
	if note != "" {
		bound = note + "\n" + bound
	}
	if err := confirm(stdin, stderr, bound, yes); err != nil {
		return err
	}
	router := modelRouter(cfg, slog.New(slog.DiscardHandler))
	var progress func(eval.TurnReplay)
	if !asJSON {
		fmt.Fprintln(stdout, bound)
		fmt.Fprintf(stdout, replayRowFormat, "TURN", "MESSAGE", "RECORDED", "NEW", "")
		progress = func(tr eval.TurnReplay) { writeReplayRow(stdout, tr) }
	}
	rep := eval.Replay(ctx, ecfg, router, rec, progress)
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "\n%d of %d turns changed · %d calls · %s tokens · %s\n",
		rep.Changed, len(rep.Turns), rep.Calls, master.Tokens(rep.Tokens), seconds(rep.Duration))
	return ctx.Err()
}

// readRecording reads a session's answered turns and what its master read
// for each, on a read-only connection, then closes it: the replay itself
// has no database. note says which session a thread's replay took.
func readRecording(ctx context.Context, cfg config.Config, session int64, thread string, ecfg eval.Config) (eval.Recording, string, error) {
	st, err := store.Open(ctx, cfg.DatabaseURL, slog.New(slog.DiscardHandler), store.ReadOnly())
	if err != nil {
		return eval.Recording{}, "", err
	}
	defer st.Close()
	var note string
	if thread != "" {
		ids, err := st.ThreadSessions(ctx, thread)
		if err != nil {
			return eval.Recording{}, "", err
		}
		if len(ids) == 0 {
			return eval.Recording{}, "", fmt.Errorf("thread %s has had no team session", thread)
		}
		session = ids[len(ids)-1]
		if len(ids) > 1 {
			note = fmt.Sprintf("Thread %s has had %d sessions; this is the latest (use --session for another).", thread, len(ids))
		}
	}
	s, err := st.Session(ctx, session)
	if errors.Is(err, master.ErrNotFound) {
		return eval.Recording{}, "", fmt.Errorf("there is no session %d", session)
	} else if err != nil {
		return eval.Recording{}, "", err
	}
	turns, answers, err := st.Transcript(ctx, session)
	if err != nil {
		return eval.Recording{}, "", err
	}
	rec := eval.Recording{Session: s}
	limit := max(ecfg.Limits.History, 2)/2 + 20 // as the orchestrator reads it
	for i, t := range turns {
		if t.State != master.TurnDone && t.State != master.TurnWaiting {
			continue // never answered: refused, cancelled, or still open
		}
		reads, err := st.TurnReads(ctx, session, t.ID, limit)
		if err != nil {
			return eval.Recording{}, "", err
		}
		rec.Turns = append(rec.Turns, eval.RecordedTurn{Turn: t, Reads: reads, Answer: answers[i].Answer, Asked: answers[i].Asked})
	}
	if len(rec.Turns) == 0 {
		return eval.Recording{}, "", fmt.Errorf("session %d has no answered turn to replay", session)
	}
	return rec, note, nil
}

const replayRowFormat = "%-6s %-34s %-40s %-40s %s\n"

// writeReplayRow prints one turn, recorded and new side by side.
func writeReplayRow(w io.Writer, tr eval.TurnReplay) {
	mark := ""
	switch {
	case tr.Why != "":
		mark = printable(master.Truncate(tr.Why, 80))
	case tr.Changed:
		mark = "changed"
	}
	side := func(s eval.Side) string {
		return fmt.Sprintf("%s (%d)", s, s.Length)
	}
	fmt.Fprintf(w, replayRowFormat, fmt.Sprint(tr.Turn), printable(master.Truncate(oneLine(tr.Message), 34)),
		printable(side(tr.Recorded)), printable(side(tr.New)), mark)
	if tr.Changed && tr.Question != "" {
		fmt.Fprintf(w, "       asks: %s\n", printable(master.Truncate(oneLine(tr.Question), 100)))
	}
}

// oneLine folds a text's lines into one.
func oneLine(s string) string {
	out := []rune{}
	space := false
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' || r == ' ' {
			if !space && len(out) > 0 {
				out = append(out, ' ')
			}
			space = true
			continue
		}
		out = append(out, r)
		space = false
	}
	return string(out)
}
