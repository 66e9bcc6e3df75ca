package llmfake

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// StatusClientGone is the Status recorded for a request whose client went
// away (cancelled, timed out) before it was answered.
const StatusClientGone = 499

// Server is a fake OpenAI-compatible server answering from a Script.
type Server struct {
	script     Script
	key        string
	models     []string
	unexpected func(msg string)
	http       *http.Server
	url        string
	served     chan struct{} // closed when Serve returned
	done       chan struct{} // closed by Close; releases Hang and Delay
	closeOnce  sync.Once

	mu          sync.Mutex
	records     []Record
	noRecords   bool          // WithoutRecords
	changed     chan struct{} // closed and replaced whenever records change
	inFlight    int
	maxInFlight int
	ids         int
}

// Record is one chat completion request the server received.
type Record struct {
	Request Request
	// Arrived is when the request reached the server.
	Arrived time.Time
	// Answered is when the server had decided the answer, just before the
	// client could see it; zero while the request is in flight.
	Answered time.Time
	// Status is the HTTP status answered (StatusClientGone if the client
	// left first); zero while in flight.
	Status int
}

// Option configures a Server.
type Option func(*Server)

// WithModels sets the models GET /v1/models lists (default gpt-4o and
// gpt-4o-mini).
func WithModels(names ...string) Option {
	return func(s *Server) { s.models = names }
}

// WithAPIKey sets the API key the server expects (default a random
// "sk-llmfake-…" key).
func WithAPIKey(key string) Option {
	return func(s *Server) { s.key = key }
}

// OnUnexpected sets what is told of a request the server or its script
// did not expect (an Unexpected reply, a malformed request, an unknown
// path): llmtest fails the test with it. By default it is ignored (the
// client still gets its error answer).
func OnUnexpected(report func(msg string)) Option {
	return func(s *Server) { s.unexpected = report }
}

// WithoutRecords keeps no record of the requests (Requests is empty,
// Wait sees none): a server that runs for hours (callon chat --demo)
// holds no growing list of every request it answered.
func WithoutRecords() Option {
	return func(s *Server) { s.noRecords = true }
}

// Start starts a server answering chat completions with script, on a
// port of the loopback interface; Close stops it. A nil script treats
// every chat request as Unexpected.
func Start(script Script, opts ...Option) (*Server, error) {
	if script == nil {
		script = func(Request) Reply { return Unexpected("no script, but a chat request arrived") }
	}
	s := &Server{
		script:     script,
		key:        "sk-llmfake-" + rand.Text(),
		models:     []string{"gpt-4o", "gpt-4o-mini"},
		unexpected: func(string) {},
		served:     make(chan struct{}),
		done:       make(chan struct{}),
		changed:    make(chan struct{}),
	}
	for _, opt := range opts {
		opt(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.unexpected(fmt.Sprintf("llmfake: unexpected request %s %s", r.Method, r.URL.Path))
		writeError(w, http.StatusNotFound, "invalid_request_error", "llmfake: no route "+r.Method+" "+r.URL.Path)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("llmfake: listen: %w", err)
	}
	s.url = "http://" + l.Addr().String()
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.served)
		_ = s.http.Serve(l) // returns when Close shuts it
	}()
	return s, nil
}

// Close stops the server: requests held by Hang or Delay end without an
// answer, and it waits for the others. Calling it again does nothing.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if s.http.Shutdown(ctx) != nil {
			s.http.Close()
		}
		<-s.served
	})
}

// URL returns the base URL of the API, ending in /v1 (an OPENAI_BASE_URL).
func (s *Server) URL() string { return s.url + "/v1" }

// APIKey returns the key the server expects as "Authorization: Bearer …";
// other requests get 401.
func (s *Server) APIKey() string { return s.key }

// Requests returns every chat completion request received so far, in order
// of arrival.
func (s *Server) Requests() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.records)
}

// Wait waits until done holds for the records so far (checked at each
// arrival and answer) and returns them; when ctx ends first, it returns
// the records and ctx's error.
func (s *Server) Wait(ctx context.Context, done func([]Record) bool) ([]Record, error) {
	for {
		s.mu.Lock()
		recs, changed := slices.Clone(s.records), s.changed
		s.mu.Unlock()
		if done(recs) {
			return recs, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return recs, ctx.Err()
		}
	}
}

// Answered counts the records answered (or abandoned by their client).
func Answered(recs []Record) int {
	n := 0
	for _, r := range recs {
		if !r.Answered.IsZero() {
			n++
		}
	}
	return n
}

// MaxInFlight returns the largest number of chat completion requests the
// server was handling at the same time.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

// Overlapping reports whether the requests were all in flight together at
// some instant: each arrived before any of them was answered. That shows
// they ran in parallel. It is false for fewer than two records.
func Overlapping(records ...Record) bool {
	if len(records) < 2 {
		return false
	}
	var lastArrival, firstAnswer time.Time
	for _, r := range records {
		if r.Arrived.After(lastArrival) {
			lastArrival = r.Arrived
		}
		if !r.Answered.IsZero() && (firstAnswer.IsZero() || r.Answered.Before(firstAnswer)) {
			firstAnswer = r.Answered
		}
	}
	return firstAnswer.IsZero() || lastArrival.Before(firstAnswer)
}

// arrive records a new request and returns its index.
func (s *Server) arrive(rec Record) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	if s.noRecords {
		return -1
	}
	s.records = append(s.records, rec)
	s.notifyLocked()
	return len(s.records) - 1
}

// answer records that request i was answered with status. It runs before
// the answer's last bytes are written, so a client that has its answer
// always finds it recorded.
func (s *Server) answer(i, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	if i < 0 {
		return // not recorded (WithoutRecords)
	}
	s.records[i].Answered = time.Now()
	s.records[i].Status = status
	s.notifyLocked()
}

func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// newID returns a fresh identifier with the prefix.
func (s *Server) newID(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids++
	return fmt.Sprintf("%s%d", prefix, s.ids)
}

func (s *Server) authorized(r *http.Request) bool {
	return r.Header.Get("Authorization") == "Bearer "+s.key
}

func writeUnauthorized(w http.ResponseWriter) {
	writeError(w, http.StatusUnauthorized, "invalid_request_error", "Incorrect API key provided.")
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		writeUnauthorized(w)
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, m := range s.models {
		list.Data = append(list.Data, model{ID: m, Object: "model", OwnedBy: "llmfake"})
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	body, err := io.ReadAll(r.Body)
	req, perr := parseRequest(body)
	if err != nil {
		perr = err
	}
	i := s.arrive(Record{Request: req, Arrived: arrived})
	if !s.authorized(r) {
		s.answer(i, http.StatusUnauthorized)
		writeUnauthorized(w)
		return
	}
	if perr != nil {
		s.unexpected(fmt.Sprintf("llmfake: bad chat completion request: %v", perr))
		s.answer(i, http.StatusBadRequest)
		writeError(w, http.StatusBadRequest, "invalid_request_error", perr.Error())
		return
	}
	reply := s.run(req)
	if reply.unexpected != "" {
		s.unexpected("llmfake: " + reply.unexpected)
	}
	if !s.wait(r, reply) {
		s.answer(i, StatusClientGone)
		return
	}
	for k, v := range reply.header {
		w.Header()[k] = v
	}
	if reply.isFault() {
		s.answer(i, reply.status)
		writeError(w, reply.status, reply.errType, reply.message)
		return
	}
	if req.Stream {
		s.stream(w, i, req, reply)
		return
	}
	resp := s.completion(req, reply)
	s.answer(i, http.StatusOK)
	writeJSON(w, http.StatusOK, resp)
}

// run calls the script, turning a panic into an Unexpected reply.
func (s *Server) run(req Request) (reply Reply) {
	defer func() {
		if p := recover(); p != nil {
			reply = Unexpected("script panicked: %v", p)
		}
	}()
	return s.script(req)
}

// wait applies the reply's delay or hang; it reports false when the client
// went away (or the server closed) first.
func (s *Server) wait(r *http.Request, reply Reply) bool {
	if reply.hang {
		select {
		case <-r.Context().Done():
		case <-s.done:
		}
		return false
	}
	if reply.delay <= 0 {
		return true
	}
	t := time.NewTimer(reply.delay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-s.done:
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, errType, message string) {
	var code any
	switch status {
	case http.StatusTooManyRequests:
		code = "rate_limit_exceeded"
	case http.StatusUnauthorized:
		code = "invalid_api_key"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": message,
		"type":    errType,
		"param":   nil,
		"code":    code,
	}})
}
