package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/eval"
	"github.com/callonbot/callon/llm"
)

// evalFlags are callon eval's options.
type evalFlags struct {
	role, masterModel, workerModel, cases, casesDir, promptFile string
	maxTokens                                                   int64
	minScore                                                    float64
	asJSON, yes, list, verbose, skipProbe                       bool
}

// evalCmd measures a model on callon eval's situations: callon's own
// master (or worker) code against teams in memory, the workers' results
// scripted, graded structurally. It needs an LLM, no database and no
// Discord, and it states its bounds before it calls a model.
func evalCmd(ctx context.Context, cfg config.Config, args []string, stdin io.Reader, stdout, stderr, usageOut io.Writer) error {
	var f evalFlags
	ok, err := parseCommand("eval", "measure a model on callon's built-in situations (and your own), graded structurally",
		args, usageOut, func(fs *flag.FlagSet) {
			fs.StringVar(&f.role, "role", eval.ForMaster, "which model to measure: master or worker")
			fs.StringVar(&f.masterModel, "master-model", cfg.MasterModel, "the master's model (provider/model for a named provider)")
			fs.StringVar(&f.workerModel, "worker-model", cfg.WorkerModel, "the workers' model, measured with --role worker")
			fs.StringVar(&f.cases, "cases", "", "the cases to run: names or globs, comma-separated (default: all)")
			fs.StringVar(&f.casesDir, "cases-dir", "", "a directory of your own situations (YAML), run with the built-in ones")
			fs.StringVar(&f.promptFile, "prompt-file", "", "master instructions to measure instead of callon's (as CALLON_MASTER_PROMPT_FILE)")
			fs.Int64Var(&f.maxTokens, "max-tokens", eval.DefaultMaxTokens, "stop once the run has used this many tokens")
			fs.Float64Var(&f.minScore, "min-score", 0, "exit with an error when the score is below this (0 to 1), for CI")
			fs.BoolVar(&f.asJSON, "json", false, "print the report as JSON")
			fs.BoolVar(&f.yes, "yes", false, "do not ask before calling the model")
			fs.BoolVar(&f.list, "list", false, "list the cases and what each tests, and exit")
			fs.BoolVar(&f.verbose, "verbose", false, "show callon's own log lines while the cases run")
			fs.BoolVar(&f.skipProbe, "skip-probe", false, "run the cases even when the model fails the first check that it calls tools")
		})
	if !ok {
		return err
	}
	if f.role != eval.ForMaster && f.role != eval.ForWorker {
		return fmt.Errorf("--role must be master or worker, got %q", f.role)
	}
	cases, err := evalCases(f)
	if err != nil {
		return err
	}
	if f.list {
		for _, s := range cases {
			fmt.Fprintf(stdout, "%-28s %-45s %s\n", s.Name, printable(s.Tests), printable(s.About))
		}
		return nil
	}
	if err := cfg.Validate(config.NeedLLM); err != nil {
		return configError(err)
	}
	if f.maxTokens <= 0 || f.minScore < 0 || f.minScore > 1 {
		return errors.New("--max-tokens must be positive and --min-score between 0 and 1")
	}
	model := f.masterModel
	if f.role == eval.ForWorker {
		model = f.workerModel
	}
	ecfg := eval.Config{Model: model, MaxTokens: f.maxTokens, Vision: cfg.Attachments.Vision(model), Limits: evalLimits(cfg),
		Instructions: cfg.MasterPrompt, Logger: slog.New(slog.DiscardHandler)}
	if f.promptFile != "" {
		if ecfg.Instructions, err = config.ReadMasterPrompt(f.promptFile); err != nil {
			return fmt.Errorf("--prompt-file: %w", err)
		}
	}
	calls, tokens := eval.Bound(ecfg, cases)
	calls++ // the probe
	bound := fmt.Sprintf("callon eval runs %d %s case(s) against %s: at most %d model calls, stopping once %d tokens are spent.",
		len(cases), f.role, model, calls, tokens)
	if err := confirm(stdin, stderr, bound, f.yes); err != nil {
		return err
	}
	log := newLogger(cfg, stderr)
	if f.verbose {
		ecfg.Logger = log
	}
	router := modelRouter(cfg, slog.New(slog.DiscardHandler))
	// One easy call first: a model that cannot call tools would fail
	// every case, and one clear message says more than a table of them.
	probe, err := llm.ProbeTools(ctx, router, model)
	if err != nil {
		return fmt.Errorf("the first call to %s failed: %w", model, err)
	}
	probed := "calls tools (" + probe.Dialect + ")"
	if !probe.CallsTools {
		probed = "does not call tools: " + probe.Detail
		if !f.skipProbe {
			return fmt.Errorf("%s %s. Every case would fail: choose a model that calls tools (or run with --skip-probe to measure it anyway)",
				model, printable(probed))
		}
	}
	if !f.asJSON {
		fmt.Fprintln(stdout, bound)
		fmt.Fprintf(stdout, "Probe: %s %s.\n", model, printable(probed))
		writeEvalHeader(stdout)
	}
	var progress func(eval.Result)
	if !f.asJSON {
		progress = func(r eval.Result) { writeEvalRow(stdout, r) }
	}
	rep := eval.Run(ctx, ecfg, router, f.role, cases, progress)
	rep.Probe = probed
	if f.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		writeEvalSummary(stdout, rep)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if rep.Score < f.minScore {
		return fmt.Errorf("score %.2f is below --min-score %.2f", rep.Score, f.minScore)
	}
	return nil
}

// evalCases are the situations a run measures.
func evalCases(f evalFlags) ([]eval.Situation, error) {
	all, err := eval.Builtin()
	if err != nil {
		return nil, fmt.Errorf("built-in situations: %w", err)
	}
	if f.casesDir != "" {
		mine, err := eval.LoadDir(f.casesDir)
		if err != nil {
			return nil, fmt.Errorf("--cases-dir: %w", err)
		}
		for _, s := range mine {
			for _, b := range all {
				if b.Name == s.Name {
					return nil, fmt.Errorf("--cases-dir: %s is named %q like a built-in situation", s.File(), s.Name)
				}
			}
		}
		all = append(all, mine...)
	}
	cases, err := eval.Select(eval.Of(all, f.role), f.cases)
	if err != nil {
		return nil, err
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("no %s case to run", f.role)
	}
	return cases, nil
}

// evalLimits are the deployment's limits, so eval's teams run as its
// teams would.
func evalLimits(cfg config.Config) eval.Limits {
	lim := cfg.Limits
	return eval.Limits{MaxRounds: lim.MaxRounds, MaxTasks: lim.MaxTasks, MaxRoles: lim.MaxWorkers, History: lim.History,
		TaskTimeout: lim.TaskTimeout}
}

// confirm states what a command will spend and asks whether to go on,
// unless yes. Asking needs a terminal: from a pipe or a file it refuses,
// rather than read an answer nobody typed.
func confirm(stdin io.Reader, stderr io.Writer, bound string, yes bool) error {
	if yes {
		return nil
	}
	if !isTerminal(stdin) {
		return fmt.Errorf("%s\nstdin is not a terminal to ask on: run it again with --yes to go ahead", bound)
	}
	fmt.Fprintf(stderr, "%s\nGo on? [y/N] ", bound)
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
		return errors.New("stopped: nothing was run")
	}
	return nil
}

// isTerminal reports whether r is a character device (a terminal).
func isTerminal(r io.Reader) bool {
	f, ok := r.(interface{ Stat() (os.FileInfo, error) })
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
