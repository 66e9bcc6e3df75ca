package llmfake

import (
	"strings"
	"sync"
)

// Script decides the reply to each chat completion request. The server may
// call it from several goroutines at once, so a script with state must
// guard it (Seq does).
type Script func(req Request) Reply

// Always answers every request with r.
func Always(r Reply) Script {
	return func(Request) Reply { return r }
}

// Seq answers the requests it sees with the replies in order, one each.
// A request beyond the last reply is Unexpected (which fails a test).
// Under Switch, each route's Seq counts only the requests routed to it.
func Seq(replies ...Reply) Script {
	steps := make([]Script, len(replies))
	for i, r := range replies {
		steps[i] = Always(r)
	}
	return SeqFunc(steps...)
}

// SeqFunc is Seq for replies that depend on the request: the n-th request
// it sees is answered by the n-th script.
func SeqFunc(steps ...Script) Script {
	var (
		mu   sync.Mutex
		next int
	)
	return func(req Request) Reply {
		mu.Lock()
		n := next
		next++
		mu.Unlock()
		if n >= len(steps) {
			return Unexpected("Seq has %d replies; request %d (system %q, last user %q) has none",
				len(steps), n+1, clip(req.System()), clip(req.LastUser()))
		}
		return steps[n](req)
	}
}

// Route is one branch of a Switch: a condition and the script that answers
// the requests meeting it.
type Route struct {
	match  func(Request) bool
	script Script
}

// Match routes the requests whose system prompt contains substr to s; an
// empty substr matches every request, which makes a default route.
// Workers' prompts start "You are the <role> of a team working on: …", so
// Match("You are the researcher", …) picks out the researcher's calls.
func Match(substr string, s Script) Route {
	return Route{match: func(r Request) bool { return strings.Contains(r.System(), substr) }, script: s}
}

// MatchFunc routes the requests for which pred is true to s.
func MatchFunc(pred func(Request) bool, s Script) Route {
	return Route{match: pred, script: s}
}

// Switch answers each request with the script of the first route that
// matches it; a request no route matches is Unexpected.
func Switch(routes ...Route) Script {
	return func(req Request) Reply {
		for _, rt := range routes {
			if rt.match(req) {
				return rt.script(req)
			}
		}
		return Unexpected("no route matches request (system %q, last user %q)", clip(req.System()), clip(req.LastUser()))
	}
}

// clip shortens s for failure messages.
func clip(s string) string {
	const limit = 80
	if r := []rune(s); len(r) > limit {
		return string(r[:limit]) + "…"
	}
	return s
}
