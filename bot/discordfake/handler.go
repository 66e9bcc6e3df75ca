package discordfake

import (
	"bytes"
	"cmp"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"slices"
	"strings"
)

// handler is the logic of one REST endpoint. It runs with s.mu held, so it
// may call every …Locked method, and says what to answer: a status and a
// body to send as JSON (nil for no body, as with 204), or a Discord error.
// The helpers ok, created, noContent and fail spell the three cases.
type handler func(r *request) (status int, body any, e *apiError)

// request is an HTTP request whose payload has been read: the JSON body
// ("{}" when empty; payload_json for multipart uploads) and the files
// uploaded with it.
type request struct {
	*http.Request
	body  []byte
	files []Attachment
	// after, when a handler sets it, runs once s.mu is released and
	// before the answer is written.
	after func()
}

// decode unmarshals the JSON body into v.
func (r *request) decode(v any) *apiError { return decode(r.body, v) }

// message decodes the body as a message create or edit.
func (r *request) message() (*messageBody, *apiError) { return decodeMessageBody(r.body) }

func ok(body any) (int, any, *apiError)      { return http.StatusOK, body, nil }
func created(body any) (int, any, *apiError) { return http.StatusCreated, body, nil }
func noContent() (int, any, *apiError)       { return http.StatusNoContent, nil, nil }
func fail(e *apiError) (int, any, *apiError) { return e.status, nil, e }

// serve adapts a handler: it reads the payload, runs h under s.mu and
// writes what h returned. The body is marshalled before the lock is
// released, since it may share slices with the server's records.
func (s *Server) serve(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, hr *http.Request) {
		body, files, e := readPayload(hr)
		if e != nil {
			writeError(w, e)
			return
		}
		s.mu.Lock()
		req := &request{Request: hr, body: body, files: files}
		status, out, e := h(req)
		var data []byte
		var err error
		if e == nil && out != nil {
			data, err = json.Marshal(out)
		}
		s.mu.Unlock()
		if req.after != nil {
			req.after()
		}

		switch {
		case e != nil:
			writeError(w, e)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		case out == nil:
			w.WriteHeader(status)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write(data)
		}
	}
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// readPayload returns the JSON body of a request, from payload_json when
// it is multipart, and the files uploaded with it.
func readPayload(r *http.Request) ([]byte, []Attachment, *apiError) {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		body, err := io.ReadAll(io.LimitReader(r.Body, 25<<20))
		if err != nil {
			return nil, nil, errInvalidJSON()
		}
		if len(bytes.TrimSpace(body)) == 0 {
			body = []byte("{}")
		}
		return body, nil, nil
	}
	if err := r.ParseMultipartForm(25 << 20); err != nil {
		return nil, nil, errInvalidJSON()
	}
	body := []byte("{}")
	if v := r.MultipartForm.Value["payload_json"]; len(v) > 0 {
		body = []byte(v[0])
	}
	var files []Attachment
	keys := make([]string, 0, len(r.MultipartForm.File))
	for k := range r.MultipartForm.File {
		keys = append(keys, k)
	}
	// files[2] before files[10]
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b))
	})
	for _, k := range keys {
		for _, fh := range r.MultipartForm.File[k] {
			f, err := fh.Open()
			if err != nil {
				return nil, nil, errInvalidJSON()
			}
			data, err := io.ReadAll(f)
			_ = f.Close()
			if err != nil {
				return nil, nil, errInvalidJSON()
			}
			files = append(files, Attachment{Filename: fh.Filename, ContentType: fh.Header.Get("Content-Type"), Data: data})
		}
	}
	return body, files, nil
}

// decode unmarshals a request body, ignoring unknown fields as Discord does.
func decode(body []byte, v any) *apiError {
	if err := json.Unmarshal(body, v); err != nil {
		return errInvalidJSON()
	}
	return nil
}
