package bench

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/callonbot/callon/internal/e2e"
)

// proc is callon running as a process of its own, which the bench can
// kill and whose memory is its own.
type proc struct {
	cmd      *exec.Cmd
	httpAddr string
	exited   chan struct{} // closed once the process has been reaped
	err      error         // what Wait said, once exited is closed
}

// spawn runs callon in a process of its own on the world's environment.
// It returns once the process has identified on the gateway.
func (w *world) spawn() (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	env := maps.Clone(w.env)
	env["CALLON_HTTP_ADDR"] = addr
	before := len(w.dc.IdentifyLog())
	p := &proc{cmd: w.b.deps.Command(env), httpAddr: addr, exited: make(chan struct{})}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start callon: %w", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	var stopped error
	w.wait(func() bool {
		select {
		case <-p.exited:
			stopped = fmt.Errorf("callon exited before it was ready: %v", p.err)
			return true
		default:
		}
		return len(w.dc.IdentifyLog()) > before && w.dc.Connected() && len(w.dc.Commands("")) == e2e.CommandCount
	}, "the callon process to connect")
	if stopped != nil {
		return nil, stopped
	}
	return p, nil
}

// kill ends the process at once (SIGKILL), as a crash would, and waits
// until it is gone.
func (p *proc) kill() {
	_ = p.cmd.Process.Kill() // gone already is as good: exited says so
	<-p.exited
}

// stats reads the process's figures from its /metrics.
func (p *proc) stats(ctx context.Context) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.httpAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("read callon's /metrics: %w", err)
	}
	defer resp.Body.Close()
	want := map[string]bool{"callon_go_goroutines": true, "callon_go_memstats_heap_inuse_bytes": true,
		"callon_process_resident_memory_bytes": true}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok || !want[name] {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err == nil {
			out[name] = v
		}
	}
	if len(out) != len(want) {
		return nil, fmt.Errorf("callon's /metrics lacks some of %v (got %v)", want, out)
	}
	return out, sc.Err()
}

// freeAddr returns a loopback address with a port nothing listens on.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
