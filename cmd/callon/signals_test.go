package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/callonbot/callon/llm/llmtest"
)

func needInfo(question string) llmtest.Reply {
	return llmtest.Call("report", map[string]any{"status": "need_info", "result": "half done", "question": question})
}

func TestNeedInfoAnsweredByTheMaster(t *testing.T) {
	t.Parallel()
	var resumed llmtest.Request
	var mu sync.Mutex
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply {
				return delegate(task{Role: "researcher", Instruction: "compare prices"})
			},
			func(r llmtest.Request) llmtest.Reply {
				if !r.HasTool("answer_worker") || !strings.Contains(toolResults(r), "Which currency?") {
					return llmtest.Unexpected("the master was not offered the worker's question")
				}
				return llmtest.Call("answer_worker", map[string]any{"task": 0, "answer": "Euros"})
			},
			func(llmtest.Request) llmtest.Reply { return reply("Prices compared in euros.") })),
		llmtest.Match("You are the researcher", llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply { return needInfo("Which currency?") },
			func(r llmtest.Request) llmtest.Reply {
				mu.Lock()
				resumed = r
				mu.Unlock()
				return report("PRICES-EUR")
			}))))
	thread := w.team("Pricing")
	msg := w.say(thread, "compare prices")
	if got := w.waitReply(thread, msg); got != "Prices compared in euros." {
		t.Errorf("reply = %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if u := resumed.LastUser(); !strings.Contains(u, "You asked: Which currency?") || !strings.Contains(u, "The answer: Euros") || !strings.Contains(u, "half done") {
		t.Errorf("the resumed worker did not see its question, the answer and its work so far:\n%s", u)
	}
	sigs := w.signals(thread)
	if !hasSignal(sigs, "NEED_INFO", `"question":"Which currency?"`) {
		t.Errorf("no NEED_INFO signal with the question in %v", sigs)
	}
}

func TestNeedInfoAnsweredByTheUser(t *testing.T) {
	t.Parallel()
	var resumed llmtest.Request
	var mu sync.Mutex
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply {
				return delegate(task{Role: "planner", Instruction: "plan the offsite"})
			},
			func(llmtest.Request) llmtest.Reply {
				return llmtest.Call("ask_user", map[string]any{"question": "The planner asks: how many people?"})
			},
			func(llmtest.Request) llmtest.Reply { return reply("Plan for 12 people is ready.") })),
		llmtest.Match("You are the planner", llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply { return needInfo("How many people?") },
			func(r llmtest.Request) llmtest.Reply {
				mu.Lock()
				resumed = r
				mu.Unlock()
				return report("PLAN-12")
			}))))
	thread := w.team("Offsite")
	msg := w.say(thread, "plan our offsite")
	if got := w.waitReply(thread, msg); got != "The planner asks: how many people?" {
		t.Fatalf("first answer = %q, want the question", got)
	}
	w.say(thread, "12 of us")
	w.dc.WaitFor(t, func() bool {
		parts := w.botMessages(thread)
		return strings.Contains(parts[len(parts)-1].Content, "Plan for 12 people")
	}, "the plan")
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(resumed.LastUser(), "The answer: 12 of us") {
		t.Errorf("the user's answer did not go back to the waiting worker:\n%s", resumed.LastUser())
	}
	if n := len(w.ai.Requests()); n != 5 {
		t.Errorf("got %d model calls, want 5 (master, planner, master, planner, master)", n)
	}
}

func TestBlockedLeadsToReassignment(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply {
				return delegate(task{Role: "writer", Instruction: "write the SQL migration"})
			},
			func(r llmtest.Request) llmtest.Reply {
				if !strings.Contains(toolResults(r), "blocked: I only write prose") {
					return llmtest.Unexpected("the master was not told why the writer is blocked")
				}
				return delegate(task{Role: "engineer", Instruction: "write the SQL migration"})
			},
			func(llmtest.Request) llmtest.Reply { return reply("The engineer wrote it.") })),
		llmtest.Match("You are the writer", llmtest.Seq(llmtest.Call("report", map[string]any{"status": "blocked", "result": "I only write prose"}))),
		llmtest.Match("You are the engineer", llmtest.Seq(report("ALTER TABLE …")))))
	thread := w.team("Migration")
	msg := w.say(thread, "write the migration")
	if got := w.waitReply(thread, msg); got != "The engineer wrote it." {
		t.Errorf("reply = %q", got)
	}
	if !hasSignal(w.signals(thread), "BLOCKED", `"reason":"I only write prose"`) {
		t.Error("no BLOCKED signal with the reason")
	}
}

func TestHandoff(t *testing.T) {
	t.Parallel()
	var seen llmtest.Request
	var mu sync.Mutex
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply {
				return delegate(task{Role: "researcher", Instruction: "find the facts and write the post"})
			},
			func(r llmtest.Request) llmtest.Reply {
				mu.Lock()
				seen = r
				mu.Unlock()
				return reply("Post written.")
			})),
		llmtest.Match("You are the researcher", func(r llmtest.Request) llmtest.Reply {
			if !r.HasTool("handoff") || strings.Contains(strings.Join(r.ToolEnum("handoff", "role"), ","), "researcher") {
				return llmtest.Unexpected("handoff not offered, or offered to the researcher itself: %v", r.ToolEnum("handoff", "role"))
			}
			return llmtest.Call("handoff", map[string]any{"role": "writer", "instruction": "write the post from these facts", "result": "FACTS-1"})
		}),
		llmtest.Match("You are the writer", func(r llmtest.Request) llmtest.Reply {
			if !strings.Contains(r.LastUser(), "FACTS-1") || !strings.Contains(r.LastUser(), "write the post from these facts") {
				return llmtest.Unexpected("the writer did not get the handoff: %s", r.LastUser())
			}
			return report("POST-1")
		})))
	thread := w.team("Blog")
	msg := w.say(thread, "blog about it")
	w.waitReply(thread, msg)
	mu.Lock()
	defer mu.Unlock()
	if res := toolResults(seen); !strings.Contains(res, "researcher: done") || !strings.Contains(res, "writer: done") || !strings.Contains(res, "POST-1") {
		t.Errorf("the master did not see both tasks of the round:\n%s", res)
	}
	if !hasSignal(w.signals(thread), "HANDOFF", `"to":"writer"`) {
		t.Error("no HANDOFF signal to the writer")
	}
}

func TestProgressShowsInTheStatusMessage(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(delegate(task{Role: "researcher", Instruction: "dig"}), reply("Done."))),
		llmtest.Match("You are the researcher", llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply {
				return llmtest.Call("progress", map[string]any{"percent": 40, "note": "reading the changelog"})
			},
			func(llmtest.Request) llmtest.Reply { <-release; return report("found it") }))))
	t.Cleanup(free)
	thread := w.team("Progress")
	msg := w.say(thread, "go")
	w.dc.WaitFor(t, func() bool {
		for _, m := range w.botMessages(thread) {
			if strings.Contains(m.Content, "40% reading the changelog") {
				return true
			}
		}
		return false
	}, "the progress note in the status message")
	free()
	w.waitReply(thread, msg)
	if !hasSignal(w.signals(thread), "PROGRESS", `"note":"reading the changelog"`) {
		t.Error("no PROGRESS signal")
	}
	// /team tells the same story in words, with times in each reader's
	// own time zone.
	text := embedText(w.command(thread, w.dc.UserID(), 0, "team"))
	for _, want := range []string{"**researcher** finished · <t:", "**researcher** at 40%: reading the changelog · <t:", "**researcher** started · <t:"} {
		if !strings.Contains(text, want) {
			t.Errorf("/team's events lack %q:\n%s", want, text)
		}
	}
}

func TestSignalsCommandPrintsTheTrail(t *testing.T) {
	t.Parallel()
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(delegate(task{Role: "researcher", Instruction: "look"}), reply("ok"))),
		llmtest.Match("You are the researcher", llmtest.Seq(
			llmtest.Call("progress", map[string]any{"percent": 50, "note": "halfway"}),
			report("found")))))
	thread := w.team("Trail")
	w.waitReply(thread, w.say(thread, "go"))
	out, _, err := runCmd(t, map[string]string{"DATABASE_URL": w.dbURL}, "signals", "--thread", thread)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var s struct {
			Kind    string          `json:"kind"`
			Task    int64           `json:"task"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("line %q is not JSON: %v", line, err)
		}
		if s.Task == 0 {
			t.Errorf("signal %s has no task", s.Kind)
		}
		kinds = append(kinds, s.Kind)
	}
	if got := strings.Join(kinds, " "); got != "ACK PROGRESS TASK_COMPLETE" {
		t.Errorf("trail = %s, want ACK PROGRESS TASK_COMPLETE", got)
	}
	if _, _, err := runCmd(t, map[string]string{"DATABASE_URL": w.dbURL}, "signals"); err == nil {
		t.Error("signals without --thread or --session returned nil")
	}
}

// The dashboard's trail as JSON lines is what `callon signals` prints.
func TestDashboardSignalsMatchTheCommand(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	w := setup(t, llmtest.Switch(
		llmtest.Match(masterPrompt, llmtest.Seq(delegate(task{Role: "researcher", Instruction: "look"}), reply("ok"))),
		llmtest.Match("You are the researcher", llmtest.Seq(
			llmtest.Call("progress", map[string]any{"percent": 50, "note": "halfway"}),
			report("found")))),
		"CALLON_HTTP_ADDR", addr, "CALLON_DASHBOARD_TOKEN", "a-dashboard-token-of-16+")
	thread := w.team("Trail")
	w.waitReply(thread, w.say(thread, "go"))
	session := w.sessions(w.db(), thread)[0]
	out, _, err := runCmd(t, map[string]string{"DATABASE_URL": w.dbURL}, "signals", "--session", strconv.FormatInt(session, 10))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("http://%s/dashboard/signals.jsonl?team=%d", addr, session), nil)
	req.Header.Set("Authorization", "Bearer a-dashboard-token-of-16+")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || string(body) != out || strings.Count(out, "\n") != 3 {
		t.Errorf("the dashboard's JSON lines (%d):\n%s\nwant what callon signals prints:\n%s", resp.StatusCode, body, out)
	}
}
