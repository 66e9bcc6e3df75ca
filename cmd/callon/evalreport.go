package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/callonbot/callon/eval"
	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/terminal"
)

// The columns of callon eval's table.
const evalRowFormat = "%-28s %-5s %8s %8s  %-10s %s\n"

func writeEvalHeader(w io.Writer) {
	fmt.Fprintf(w, evalRowFormat, "CASE", "PASS?", "LATENCY", "TOKENS", "DIALECT", "WHY")
}

// writeEvalRow prints one case as it ends. What a model wrote may reach
// the why column: it is made printable first.
func writeEvalRow(w io.Writer, r eval.Result) {
	verdict, why := "pass", ""
	if !r.Pass {
		verdict = "FAIL"
		why = r.Why[0]
		if n := len(r.Why) - 1; n > 0 {
			why += fmt.Sprintf(" (+%d more)", n)
		}
	}
	fmt.Fprintf(w, evalRowFormat, r.Case, verdict, seconds(r.Latency), master.Tokens(r.Tokens),
		strings.Join(r.Dialects, ","), printable(master.Truncate(why, 110)))
}

func writeEvalSummary(w io.Writer, rep eval.Report) {
	var ds []string
	for _, d := range slices.Sorted(maps.Keys(rep.Dialects)) {
		ds = append(ds, fmt.Sprintf("%s %d", d, rep.Dialects[d]))
	}
	fmt.Fprintf(w, "\nScore: %d/%d (%.0f%%) for %s model %s · %d calls · %s tokens · %s · calls written: %s\n",
		rep.Passed, rep.Total, 100*rep.Score, rep.For, rep.Model, rep.Calls, master.Tokens(rep.Tokens), seconds(rep.Duration),
		strings.Join(ds, ", "))
	var failed []eval.Result
	for _, r := range rep.Results {
		if !r.Pass {
			failed = append(failed, r)
		}
	}
	if len(failed) == 0 {
		return
	}
	fmt.Fprintln(w, "\nWhy the failed cases failed:")
	for _, r := range failed {
		fmt.Fprintf(w, "  %s (%s):\n", r.Case, r.Tests)
		for _, why := range r.Why {
			fmt.Fprintf(w, "    - %s\n", printable(master.Truncate(why, 300)))
		}
	}
}

func seconds(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// printable is a model's text on one line of a report: terminal.Clean
// (no control character, no bidirectional override: the text never drives
// or reorders the terminal), its line breaks and tabs as spaces.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, terminal.Clean(s))
}
