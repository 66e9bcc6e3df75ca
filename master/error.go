package master

import (
	"errors"
	"fmt"
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

// ErrorMessage is the safe message of the first *Error in err's chain,
// or a generic sentence for any other error.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return "Sorry, something went wrong on my side. Please try again in a moment."
}
