package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/callonbot/callon/config"
	"github.com/callonbot/callon/internal/bench"
	"github.com/callonbot/callon/store/storetest"
)

// `callon bench --quick --json` runs every stage against the fakes on a
// database of its own and reports samples for each. Only the shape of
// the report is checked, never how fast anything was: figures belong in
// docs/performance.md, not in assertions.
func TestBenchQuick(t *testing.T) {
	t.Parallel()
	url := storetest.URL(t) // the bench creates databases of its own beside it
	cfg := config.Load(func(k string) string {
		if k == "DATABASE_URL" {
			return url
		}
		return ""
	})
	var out bytes.Buffer
	// discordgo logs through one global hook, to the last bot's logger:
	// another test's gateway may write to errs while the bench does.
	var errs syncBuffer
	// This test binary runs as callon when asked (TestMain).
	command := func(env map[string]string) *exec.Cmd {
		cmd := selfCommand(env)
		cmd.Path, cmd.Args = os.Args[0], []string{os.Args[0]}
		cmd.Env = append(cmd.Env, asCallon+"=1")
		return cmd
	}
	if err := benchCmd(t.Context(), cfg, []string{"--quick", "--json"}, &out, &errs, &errs, command); err != nil {
		t.Fatalf("callon bench --quick --json: %v\n%s", err, errs.String())
	}
	var rep bench.Report
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("the report is not the JSON of a bench.Report: %v", err)
	}
	if rep.Machine.CPUs < 1 || rep.Machine.GoVersion == "" {
		t.Errorf("machine = %+v, want the Go version and the CPUs", rep.Machine)
	}
	if !reflect.DeepEqual(rep.Sizes, bench.QuickSizes()) {
		t.Errorf("sizes = %+v, want the quick ones %+v", rep.Sizes, bench.QuickSizes())
	}
	want := map[string]bool{ // stage: reports a latency
		"turn.direct": true, "turn.parallel3": true, "turn.parallel5": true, "turn.chain2": true, "turn.idle": false,
		"context": false, "pickup": true, "burndown": false,
		"scale.empty": false, "scale.dormant": false, "scale.active": false, "recovery": true, "recovery.overhead": true,
		"outage.2s": true, "shutdown": true,
		"presence.off": true, "presence.memory": true, "presence.memory.remember": true, "presence.review": true,
		"presence.review.merged": true, "presence.personas": true,
	}
	got := map[string]bool{}
	for _, s := range rep.Stages {
		got[s.Name] = true
		latency, known := want[s.Name]
		switch {
		case !known:
			t.Errorf("unexpected stage %q", s.Name)
		case s.Samples < 1:
			t.Errorf("stage %s has %d samples, want at least 1", s.Name, s.Samples)
		case s.What == "":
			t.Errorf("stage %s does not say what it measured", s.Name)
		case latency && (s.Latency == nil || !(s.Latency.P50 <= s.Latency.P95 && s.Latency.P95 <= s.Latency.P99 && s.Latency.P99 <= s.Latency.Max)):
			t.Errorf("stage %s latency = %+v, want p50 ≤ p95 ≤ p99 ≤ max", s.Name, s.Latency)
		case !latency && len(s.Values) == 0:
			t.Errorf("stage %s reports no figure", s.Name)
		}
		for _, v := range s.Values {
			if v.Name == "" || v.Value != v.Value { // NaN
				t.Errorf("stage %s has a bad value %+v", s.Name, v)
			}
		}
	}
	for name := range want {
		if !got[name] {
			t.Errorf("stage %s is missing from the report", name)
		}
	}
	// The table is the same report for people.
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for name := range want {
		if !strings.Contains(table.String(), name) {
			t.Errorf("the table lacks stage %s:\n%s", name, table.String())
		}
	}
}
