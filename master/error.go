package master

import (
	"errors"
	"fmt"
	"strings"
)

// Error codes: what kind of failure an Error is. They are a contract
// with the edges (the bot, the HTTP API), which decide from the code how
// to answer; the Message is what a person may read.
const (
	EInternal    = "internal"     // a bug or an unexpected failure: log it, say something generic
	EInvalid     = "invalid"      // the input is wrong; Message says how to fix it
	ENotFound    = "not_found"    // the thing asked for does not exist
	ENotAllowed  = "not_allowed"  // the person may not do this
	EConflict    = "conflict"     // the state does not allow it (already done, already active)
	ELimit       = "limit"        // a cap or budget is reached
	EUnavailable = "unavailable"  // a dependency is down; a later try may work
	EModel       = "model_config" // the LLM server refuses the call for good (key, model, request)
)

// Sentinel errors: conditions code reacts to. Those a person may meet
// reach the edges wrapped in an *Error that says it in words.
var (
	// ErrNotFound means the row asked for does not exist.
	ErrNotFound = errors.New("not found")
	// ErrStale means a guarded update matched nothing: the task was
	// re-claimed, the turn moved on, or the lease was lost. The caller's
	// result is obsolete and was not applied.
	ErrStale = errors.New("stale: state changed underneath")
	// ErrSessionActive means the thread already has an active session.
	ErrSessionActive = errors.New("thread already has an active session")
	// ErrCeiling means a turn has made as many master model calls as it
	// may: no path may call the model for it again.
	ErrCeiling = errors.New("master call ceiling reached")
	// ErrPermanent marks a delivery error that retrying cannot fix (a
	// deleted channel, missing permissions). Messengers wrap such errors
	// with it.
	ErrPermanent = errors.New("permanent delivery error")
	// ErrNotAllowed means the member may not do this to the session.
	ErrNotAllowed = errors.New("not allowed")
	// ErrRosterFull means a scope already holds as many roles as a team
	// may have.
	ErrRosterFull = errors.New("roster full")
	// ErrReportCapped means too many reports went between two sessions
	// within the hour.
	ErrReportCapped = errors.New("report cap reached")
	// ErrPingPong means a turn started by a report tried to report back
	// to the session that sent it.
	ErrPingPong = errors.New("a turn started by a report cannot report back to its sender")
	// ErrAlreadyReported means this turn has reported already: one report
	// per turn, so a turn run again after a crash cannot report twice.
	ErrAlreadyReported = errors.New("this turn has reported already")
	// ErrKeyUsed means a team was started with this idempotency key
	// already.
	ErrKeyUsed = errors.New("idempotency key used already")
	// ErrInProgress means another request with this idempotency key is
	// starting its team right now.
	ErrInProgress = errors.New("a request with this idempotency key is in progress")
)

// NoTeamHere is what a person reads who runs a team command where no
// team is active.
const NoTeamHere = "There is no active team in this channel. Start one with `/callon goal: …`, then use this command inside its thread."

// Error is an error whose Message is safe to show to people: it never
// carries internals. Err, when set, is the cause, for logs.
type Error struct {
	Code    string
	Message string
	Err     error
}

// Errorf returns an *Error with code and a formatted safe message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrorCode is the code of the first *Error in err's chain; EInternal for
// any other non-nil error, "" for nil.
func ErrorCode(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	default:
		return EInternal
	}
}

// sentence ends text with a period, unless it ends a sentence already
// (a server's message often does).
func sentence(text string) string {
	text = strings.TrimSpace(text)
	if strings.HasSuffix(text, ".") || strings.HasSuffix(text, "!") || strings.HasSuffix(text, "?") {
		return text
	}
	return text + "."
}

// ErrorMessage is the safe message of the first *Error in err's chain,
// or a generic sentence for any other error.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return "Sorry, something went wrong on my side. Please try again in a moment."
}
