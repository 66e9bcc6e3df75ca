package master

import "cmp"

// Surface is where people talk to a team: a thread the bot serves (the
// default surface), or the terminal of `callon chat`. A session
// belongs to one surface for its whole life.
type Surface string

// SurfaceTerminal is a team in the terminal of `callon chat`.
const SurfaceTerminal Surface = "terminal"

// Scope is the work a process takes from the database it shares with
// other processes: rows of the sessions of one surface and, for a chat,
// only those of the sessions attached to it. Every claim (master steps,
// outbox messages, files, tasks, status messages, approval requests to
// settle) takes a Scope, so a bot, worker processes and any number of
// chats on one database never take each other's work: a chat never
// prints the reply of a team in a thread, nor runs another chat's turn
// with its own model and roles.
//
// The zero Scope is every session of the default surface: a bot's, a
// worker process's.
type Scope struct {
	Surface Surface // "": the default surface
	// Attached, when set, is the owner (NewOwner) of the process the
	// sessions are attached to: a chat serves its own sessions only.
	Attached string
}

// Of returns the surface s serves.
func (s Scope) Of() Surface { return cmp.Or(s.Surface, defaultSurface) }

// ChatScope is the scope of the chat process owner: the terminal
// sessions attached to it.
func ChatScope(owner string) Scope { return Scope{Surface: SurfaceTerminal, Attached: owner} }

// Serves reports whether s takes the work of session sess.
func (s Scope) Serves(sess Session) bool {
	return cmp.Or(sess.Surface, defaultSurface) == s.Of() && (s.Attached == "" || sess.AttachedTo == s.Attached)
}
