package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/callonbot/callon/master"
)

// Error codes of the API, in every error's "code". The message is for
// people and may change; the code is the contract.
const (
	CodeInvalid        = "invalid"         // 400: the body or a field is wrong; the message says how
	CodeUnauthorized   = "unauthorized"    // 401: not signed with the secret
	CodeStaleTimestamp = "stale_timestamp" // 401: webhook-timestamp more than 5 minutes away
	CodeForbidden      = "forbidden"       // 403: the member may not do this, or callon may not post there
	CodeNotFound       = "not_found"       // 404: no such team, channel, member or endpoint
	CodeReplayed       = "replayed"        // 409: this webhook-id was used before
	CodeConflict       = "conflict"        // 409: the state does not allow it (a dissolved team)
	CodeInProgress     = "in_progress"     // 409: a request with this idempotency key is being carried out; retry
	CodeTooLarge       = "too_large"       // 413: the body is larger than 64 KiB
	CodeLimit          = "limit"           // 429: a cap on teams, a team's queue or a person's rate
	CodeRateLimited    = "rate_limited"    // 429: too many requests to the API
	CodeInternal       = "internal"        // 500: callon failed; the log says why
	CodeUnavailable    = "unavailable"     // 503: Discord or the database did not answer; retry
)

// ErrorBody is every error's JSON.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	if cw, ok := w.(*codeWriter); ok {
		cw.code = code
	}
	var b ErrorBody
	b.Error.Code, b.Error.Message = code, message
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers err: a *master.Error by its code, with its message; any
// other error is logged and answered as internal, without its text.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, master.ErrInProgress) {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusConflict, CodeInProgress, master.ErrorMessage(err))
		return
	}
	var status int
	var code string
	switch master.ErrorCode(err) {
	case master.EInvalid:
		status, code = http.StatusBadRequest, CodeInvalid
	case master.ENotFound:
		status, code = http.StatusNotFound, CodeNotFound
	case master.ENotAllowed:
		status, code = http.StatusForbidden, CodeForbidden
	case master.EConflict:
		status, code = http.StatusConflict, CodeConflict
	case master.ELimit:
		status, code = http.StatusTooManyRequests, CodeLimit
	case master.EUnavailable:
		status, code = http.StatusServiceUnavailable, CodeUnavailable
		h.log.Warn("api request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	default:
		if r.Context().Err() != nil {
			writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "callon could not finish in time; please try again.")
			return
		}
		h.log.Error("api request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, CodeInternal, "Sorry, callon failed to carry this out; its log says why. Please try again later.")
		return
	}
	writeError(w, status, code, master.ErrorMessage(err))
}

// jsonProblem says what is wrong with a body, without echoing it.
func jsonProblem(err error) string {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return fmt.Sprintf("invalid JSON at byte %d", syntax.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("%q should be a %s", typ.Field, typ.Type)
	case errors.Is(err, io.EOF):
		return "it is empty"
	}
	return err.Error() // json: unknown field "x", and the like
}
