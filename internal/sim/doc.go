// Package sim tests callon's turn state machine with generated sequences:
// seeded random sequences of events (user messages, some with files, the
// master's decisions and faults, worker outcomes, downloads and their
// failures, expired leases, crashes and restarts, outbox deliveries,
// dissolves) run against the real store on
// Postgres and the real orchestrator, with scripted models, checking
// invariants after every event and once the sequence has settled.
//
// It has no code of its own outside its tests:
//
//	go test ./sim                                 # the modest size make test runs
//	go test ./sim -args -sequences=5000 -events=120
//	go test ./sim -args -seed=1234                # one sequence again, from a failure message
package sim
