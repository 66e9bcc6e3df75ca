// Package api serves callon's inbound HTTP API on CALLON_HTTP_ADDR: an
// outside dispatcher starts a team (POST /v1/dispatch), adds a message
// to one (POST /v1/sessions/{id}/messages) and reads one (GET
// /v1/sessions/{id}). It owns the wire: signatures (the Standard Webhooks
// scheme of package webhook), replay refusal, body size and rate bounds,
// JSON in and out, and errors as {"error": {"code", "message"}}. What a
// request does is master.API's business.
package api

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/callonbot/callon/master"
	"github.com/callonbot/callon/webhook"
)

// Service is what the handler needs done; master.API does it.
type Service interface {
	Dispatch(ctx context.Context, d master.DispatchRequest) (master.Session, bool, error)
	Message(ctx context.Context, sessionID int64, m master.APIMessage) (master.Turn, bool, error)
	View(ctx context.Context, sessionID int64) (master.SessionView, error)
	Seen(ctx context.Context, id string, expires time.Time) (bool, error)
}

var _ Service = (*master.API)(nil)

// Metrics counts the API's requests; metrics.Registry implements it.
type Metrics interface {
	// APIRequest counts a request to endpoint ("dispatch", "message",
	// "session", "other") answered with code: "ok" or an error's code.
	APIRequest(endpoint, code string)
}

type noMetrics struct{}

func (noMetrics) APIRequest(string, string) {}

// Defaults of Config.
const (
	DefaultMaxBody = 64 << 10 // bytes of a request's body
	DefaultRate    = 120      // signed requests a minute, per caller and process
	DefaultBurst   = 20       // signed requests at once above the rate
	// DefaultUnsignedRate and DefaultUnsignedBurst bound the requests that
	// fail the signature check, per address and process.
	DefaultUnsignedRate  = 10
	DefaultUnsignedBurst = 5
)

// Config configures the handler. Zero values take the defaults.
type Config struct {
	Secret  string           // CALLON_API_SECRET: the HMAC key of requests
	Now     func() time.Time // the clock requests' timestamps are checked against
	MaxBody int64            // a larger body is refused (413)
	Rate    int              // signed requests a minute this process takes from a caller; more are refused (429)
	Burst   int
	// UnsignedRate and UnsignedBurst bound, per address, the requests
	// that fail the signature check; beyond, they get 429. They never
	// count against a signed caller's Rate.
	UnsignedRate, UnsignedBurst int
	Timeout                     time.Duration // one request's work (60 s: a dispatch talks to Discord)
	Metrics                     Metrics       // nil: none
}

// Handler serves the API.
type Handler struct {
	cfg    Config
	svc    Service
	limits *limits
	log    *slog.Logger
	mux    *http.ServeMux
}

// New returns the API's handler, serving paths under /v1/.
func New(cfg Config, svc Service, logger *slog.Logger) *Handler {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.MaxBody = cmp.Or(cfg.MaxBody, DefaultMaxBody)
	cfg.Rate = cmp.Or(cfg.Rate, DefaultRate)
	cfg.Burst = cmp.Or(cfg.Burst, DefaultBurst)
	cfg.UnsignedRate = cmp.Or(cfg.UnsignedRate, DefaultUnsignedRate)
	cfg.UnsignedBurst = cmp.Or(cfg.UnsignedBurst, DefaultUnsignedBurst)
	cfg.Timeout = cmp.Or(cfg.Timeout, time.Minute)
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	h := &Handler{cfg: cfg, svc: svc, log: logger.With("component", "api"),
		limits: newLimits(cfg.Rate, cfg.Burst, cfg.UnsignedRate, cfg.UnsignedBurst)}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/dispatch", h.counted("dispatch", h.signed(h.dispatch)))
	mux.HandleFunc("POST /v1/sessions/{id}/messages", h.counted("message", h.signed(h.message)))
	mux.HandleFunc("GET /v1/sessions/{id}", h.counted("session", h.signed(h.session)))
	mux.HandleFunc("/v1/", h.counted("other", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "There is no such endpoint: see docs/api.md, \"Inbound API\".")
	}))
	h.mux = mux
	return h
}

// ServeHTTP serves a request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// counted counts each request to endpoint by the code it was answered
// with.
func (h *Handler) counted(endpoint string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cw := &codeWriter{ResponseWriter: w, code: "ok"}
		next(cw, r)
		h.cfg.Metrics.APIRequest(endpoint, cw.code)
	}
}

// codeWriter remembers the code of the error written through it.
type codeWriter struct {
	http.ResponseWriter
	code string
}

// request is a signed request, checked: its body and its id.
type request struct {
	*http.Request
	body []byte
	id   string // webhook-id
}

// signed wraps an endpoint with the checks every request passes, in
// this order: the body's size, the signature (over the method, path and
// body) and timestamp, and the id not seen before — who the caller is —
// and then the caller's rate. A request that fails the signature check
// counts against its address's small bucket only, so unsigned traffic
// cannot spend a signed caller's rate; beyond that bucket it gets 429.
func (h *Handler) signed(next func(w http.ResponseWriter, r request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Unsigned at a glance: refused before the body is read.
		if r.Header.Get(webhook.HeaderID) == "" || r.Header.Get(webhook.HeaderTimestamp) == "" || r.Header.Get(webhook.HeaderStdSignature) == "" {
			h.refuseUnsigned(w, r, webhook.ErrMissingHeaders)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBody))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("The body is larger than %d bytes.", h.cfg.MaxBody))
				return
			}
			writeError(w, http.StatusBadRequest, CodeInvalid, "The body could not be read.")
			return
		}
		now := h.cfg.Now()
		id, err := webhook.VerifyAPIRequest(h.cfg.Secret, r.Method, r.URL.RequestURI(), r.Header, body, now)
		if err != nil {
			h.refuseUnsigned(w, r, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
		defer cancel()
		// Remembered past the window either way a timestamp may be off.
		seen, err := h.svc.Seen(ctx, id, now.Add(2*webhook.Tolerance))
		if err != nil {
			h.fail(w, r, err)
			return
		}
		if seen {
			writeError(w, http.StatusConflict, CodeReplayed,
				"This webhook-id was used before: a request is taken once. Sign a new request with a new webhook-id; the idempotency_key makes a retry safe.")
			return
		}
		// One secret, one caller (the API has one key).
		if !h.limits.allowCaller("api") {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, CodeRateLimited,
				"Too many requests; please slow down, and sign the retry anew (with a new webhook-id) in a second.")
			return
		}
		if err := next(w, request{Request: r.WithContext(ctx), body: body, id: id}); err != nil {
			h.fail(w, r, err)
		}
	}
}

// dispatchBody is POST /v1/dispatch's body.
type dispatchBody struct {
	IdempotencyKey string   `json:"idempotency_key"`
	GuildID        string   `json:"guild_id"`
	Channel        string   `json:"channel"`
	UserID         string   `json:"user_id"`
	Goal           string   `json:"goal"`
	ReportTo       string   `json:"report_to,omitempty"`
	CallbackURL    string   `json:"callback_url,omitempty"`
	Roles          []string `json:"roles,omitempty"`
}

// DispatchResponse is POST /v1/dispatch's answer.
type DispatchResponse struct {
	Created   bool   `json:"created"` // false: the key had started this team before
	SessionID int64  `json:"session_id"`
	ThreadID  string `json:"thread_id"`
	URL       string `json:"url"`
}

func (h *Handler) dispatch(w http.ResponseWriter, r request) error {
	var b dispatchBody
	if err := decode(r.body, &b); err != nil {
		return err
	}
	s, created, err := h.svc.Dispatch(r.Context(), master.DispatchRequest{
		Key: b.IdempotencyKey, GuildID: b.GuildID, Channel: b.Channel, UserID: b.UserID, Goal: b.Goal,
		ReportTo: b.ReportTo, CallbackURL: b.CallbackURL, Roles: b.Roles,
	})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, DispatchResponse{Created: created, SessionID: s.ID, ThreadID: s.ThreadID, URL: master.JumpURL(s.GuildID, s.ThreadID)})
	return nil
}

// messageBody is POST /v1/sessions/{id}/messages's body.
type messageBody struct {
	UserID         string `json:"user_id"`
	Content        string `json:"content"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// MessageResponse is POST /v1/sessions/{id}/messages's answer.
type MessageResponse struct {
	Created   bool   `json:"created"` // false: the key had added this message before
	SessionID int64  `json:"session_id"`
	TurnID    int64  `json:"turn_id"`
	State     string `json:"state"`
}

func (h *Handler) message(w http.ResponseWriter, r request) error {
	id, err := sessionID(r.Request)
	if err != nil {
		return err
	}
	var b messageBody
	if err := decode(r.body, &b); err != nil {
		return err
	}
	t, created, err := h.svc.Message(r.Context(), id, master.APIMessage{Key: cmp.Or(b.IdempotencyKey, r.id), UserID: b.UserID, Content: b.Content})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, MessageResponse{Created: created, SessionID: id, TurnID: t.ID, State: string(t.State)})
	return nil
}

// SessionJSON is a team as GET /v1/sessions/{id} shows it.
type SessionJSON struct {
	ID         int64       `json:"id"`
	GuildID    string      `json:"guild_id"`
	ChannelID  string      `json:"channel_id"`
	ThreadID   string      `json:"thread_id"`
	URL        string      `json:"url"`
	Goal       string      `json:"goal"`
	OwnerID    string      `json:"owner_id"`
	State      string      `json:"state"` // "active" or "dissolved"
	ReportTo   *string     `json:"report_to"`
	Callback   bool        `json:"callback"` // it has a callback URL (never shown)
	Turns      TurnsJSON   `json:"turns"`
	LastReport *ReportJSON `json:"last_report"`
	Tokens     int64       `json:"tokens"`
	CreatedAt  time.Time   `json:"created_at"`
	EndedAt    *time.Time  `json:"ended_at"`
}

// TurnsJSON counts a team's messages.
type TurnsJSON struct {
	Open int `json:"open"` // queued, being answered, or waiting for an answer
	Done int `json:"done"`
}

// ReportJSON is a team's report.
type ReportJSON struct {
	ID       int64     `json:"id"`
	Summary  string    `json:"summary"`
	Final    bool      `json:"final"`
	Delivery string    `json:"delivery"`
	At       time.Time `json:"at"`
}

func (h *Handler) session(w http.ResponseWriter, r request) error {
	id, err := sessionID(r.Request)
	if err != nil {
		return err
	}
	v, err := h.svc.View(r.Context(), id)
	if err != nil {
		return err
	}
	s := v.Session
	out := SessionJSON{ID: s.ID, GuildID: s.GuildID, ChannelID: s.ChannelID, ThreadID: s.ThreadID, URL: master.JumpURL(s.GuildID, s.ThreadID),
		Goal: s.Goal, OwnerID: s.OwnerID, State: string(s.State), Callback: s.CallbackURL != "",
		Turns: TurnsJSON{Open: v.OpenTurns, Done: v.DoneTurns}, Tokens: s.Usage.Total(), CreatedAt: s.CreatedAt.UTC()}
	if s.ReportTo != "" {
		out.ReportTo = &s.ReportTo
	}
	if !s.EndedAt.IsZero() {
		e := s.EndedAt.UTC()
		out.EndedAt = &e
	}
	if rep := v.LastReport; rep != nil {
		out.LastReport = &ReportJSON{ID: rep.ID, Summary: rep.Summary, Final: rep.Final, Delivery: rep.Delivery, At: rep.At.UTC()}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// sessionID reads the {id} of a path.
func sessionID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, master.Errorf(master.ENotFound, "There is no team %q: a session id is a positive number.", r.PathValue("id"))
	}
	return id, nil
}

// decode reads a JSON object, refusing unknown fields (a typo would
// otherwise be silently ignored).
func decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return master.Errorf(master.EInvalid, "The body is not the JSON object this endpoint takes: %s.", jsonProblem(err))
	}
	if dec.More() {
		return master.Errorf(master.EInvalid, "The body holds more than one JSON value.")
	}
	return nil
}
