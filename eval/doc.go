// Package eval measures a model before a server depends on it: callon
// eval's situations (data files under situations/, and any a user adds)
// run through callon's own master (or worker) code against a team in
// memory, the workers' results scripted by the situation so that only
// the model under test is measured, and graded structurally — what was
// decided, with which roles and dependencies, which planted facts the
// answer holds, what nothing may hold — never by another model. callon
// replay re-runs a recorded team's decisions the same way, with the
// recorded workers' results. Nothing here writes to a database: the
// caller reads what replay needs (read-only) and hands it over.
package eval
