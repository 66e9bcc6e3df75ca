package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/callonbot/callon/bot/discordtest"
	"github.com/callonbot/callon/llm/llmtest"
)

var kills = flag.Int("kills", 2, "SIGKILLs in TestKillTakeover; it logs the kill-to-reply times")

// spawn runs callon as an OS process of its own (this test binary, run
// again as callon) on the world's configuration, so that a test can kill
// it with SIGKILL. The returned function kills it and waits.
func (w *world) spawn() (kill func()) {
	w.t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = []string{asCallon + "=1", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range w.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logs := &testLog{t: w.t}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	var once sync.Once
	kill = func() {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			logs.close()
		})
	}
	w.t.Cleanup(kill)
	return kill
}

// A process killed with SIGKILL while it holds a team's work (a worker's
// task, or the master's decision) has that work taken over by another
// process within seconds, not a lease; the message is answered once.
// -kills sets how many kills; the times are logged.
func TestKillTakeover(t *testing.T) {
	t.Parallel()
	var took []time.Duration
	for i := range *kills {
		took = append(took, killOnce(t, i%2 == 0))
	}
	slices.Sort(took)
	t.Logf("kill → reply over %d kills: p50 %s, max %s, all %v", len(took),
		took[len(took)/2].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), took)
}

// A process killed in a model call has its work taken over without a
// sweep and without a lease running out: with sweeps an hour apart and
// hour-long leases, the survivor still answers, once, because it was
// waiting on the dead process's liveness lock and took over the moment
// the lock was free. (Before, only the next sweep found the dead process.)
func TestKillTakeoverWithoutASweep(t *testing.T) {
	t.Parallel()
	for _, inWorker := range []bool{true, false} {
		t.Run(fmt.Sprint("worker=", inWorker), func(t *testing.T) {
			t.Parallel()
			killOnce(t, inWorker, "CALLON_SWEEP_INTERVAL", "1h", "CALLON_TASK_LEASE", "1h")
		})
	}
}

// killOnce kills the process holding a worker's task (inWorker) or the
// master's decision, and returns the time from the kill to the reply.
// env adds to or overrides the processes' environment.
func killOnce(t *testing.T, inWorker bool, env ...string) time.Duration {
	t.Helper()
	var mu sync.Mutex
	held := make(chan struct{})    // the doomed process is in the model call
	release := make(chan struct{}) // closed once it is dead
	block := func(r llmtest.Reply) llmtest.Script {
		first := true
		return func(llmtest.Request) llmtest.Reply {
			mu.Lock()
			wait := first
			first = false
			mu.Unlock()
			if wait {
				close(held)
				<-release
			}
			return r
		}
	}
	masterScript := llmtest.SeqFunc(
		func(llmtest.Request) llmtest.Reply { return delegate(task{Role: "researcher", Instruction: "look"}) },
		block(reply("the answer")),
		func(llmtest.Request) llmtest.Reply { return reply("the answer") })
	workerScript := llmtest.Always(report("found"))
	if inWorker {
		masterScript = llmtest.SeqFunc(
			func(llmtest.Request) llmtest.Reply { return delegate(task{Role: "researcher", Instruction: "look"}) },
			func(llmtest.Request) llmtest.Reply { return reply("the answer") })
		workerScript = block(report("found"))
	}
	w := newWorld(t, discordtest.New(t), llmtest.Switch(
		llmtest.Match(masterPrompt, masterScript),
		llmtest.Match("You are the researcher", workerScript)), env...)
	kill := w.spawn()
	w.dc.WaitConnected(t)
	w.dc.WaitFor(t, func() bool { return len(w.dc.Commands("")) == commandCount }, "the commands registered")
	thread := w.team(fmt.Sprintf("Kill %v", inWorker))
	msg := w.say(thread, "go")
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the first process never reached the model call")
	}
	w.start() // the survivor
	killed := time.Now()
	kill()
	close(release)
	if got := w.waitReply(thread, msg); got != "the answer" {
		t.Fatalf("reply = %q", got)
	}
	took := time.Since(killed)
	if n := len(w.reply(thread, msg)); n != 1 {
		t.Errorf("got %d replies, want 1", n)
	}
	return took
}
