package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The Standard Webhooks headers (https://www.standardwebhooks.com), on
// callon's outbound events and on requests to its API.
const (
	// HeaderID identifies a message: the same on every retry of it, so a
	// receiver that has seen it can drop it.
	HeaderID = "webhook-id"
	// HeaderTimestamp is when the message was sent, in Unix seconds.
	HeaderTimestamp = "webhook-timestamp"
	// HeaderStdSignature is "v1," and the base64 HMAC-SHA256 of
	// "<webhook-id>.<webhook-timestamp>.<body>"; several space-separated
	// signatures may be given (while a secret is being rotated), and one
	// matching is enough.
	HeaderStdSignature = "webhook-signature"
)

// Tolerance is how far a message's timestamp may be from the receiver's
// clock, either way, before Verify refuses it.
const Tolerance = 5 * time.Minute

// MaxIDLen bounds a webhook-id.
const MaxIDLen = 200

// Errors of Verify.
var (
	// ErrMissingHeaders: a Standard Webhooks header is absent or empty.
	ErrMissingHeaders = errors.New("webhook-id, webhook-timestamp and webhook-signature are required")
	// ErrTimestamp: the timestamp is unreadable or outside Tolerance.
	ErrTimestamp = errors.New("webhook-timestamp is missing, unreadable or more than 5 minutes away from now")
	// ErrSignature: no signature matches.
	ErrSignature = errors.New("webhook-signature does not match")
)

// key is the HMAC key of a secret: the bytes after "whsec_" decoded from
// base64 for a secret in the Standard Webhooks form, else the secret's
// own bytes.
func key(secret string) []byte {
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		if b, err := base64.StdEncoding.DecodeString(rest); err == nil {
			return b
		}
	}
	return []byte(secret)
}

// SignV1 returns the webhook-signature value of a message: "v1," and the
// base64 HMAC-SHA256 of "id.timestamp.body" under secret.
func SignV1(secret, id string, timestamp int64, body []byte) string {
	m := hmac.New(sha256.New, key(secret))
	m.Write([]byte(id + "." + strconv.FormatInt(timestamp, 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SignRequest sets the three Standard Webhooks headers of a message with
// id, sent at at, carrying body. Clients of callon's API written in Go
// use it to sign their requests.
func SignRequest(h http.Header, secret, id string, at time.Time, body []byte) {
	ts := at.Unix()
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderStdSignature, SignV1(secret, id, ts, body))
}

// Verify checks a message's Standard Webhooks headers against its raw
// body, before anything decodes it: the signature must be secret's over
// the id, the timestamp and body, and the timestamp within Tolerance of
// now. It returns the message's id, which the receiver should remember
// for at least Tolerance to refuse a replay. Receivers of callon's
// webhooks written in Go can use it as is; callon checks its API's
// requests with it.
func Verify(secret string, h http.Header, body []byte, now time.Time) (id string, err error) {
	id, ts, sigs := h.Get(HeaderID), h.Get(HeaderTimestamp), h.Get(HeaderStdSignature)
	if id == "" || ts == "" || sigs == "" {
		return "", ErrMissingHeaders
	}
	if len(id) > MaxIDLen {
		return "", fmt.Errorf("webhook-id is longer than %d characters", MaxIDLen)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return "", ErrTimestamp
	}
	if d := now.Sub(time.Unix(sec, 0)); d > Tolerance || d < -Tolerance {
		return "", ErrTimestamp
	}
	want := []byte(SignV1(secret, id, sec, body))
	for sig := range strings.FieldsSeq(sigs) {
		if hmac.Equal([]byte(sig), want) {
			return id, nil
		}
	}
	return "", ErrSignature
}

// Sign returns the X-Callon-Signature value of body under secret.
//
// Deprecated: X-Callon-Signature can be replayed; use SignV1.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// VerifyLegacy reports whether signature (an X-Callon-Signature value)
// is body's under secret, in constant time.
//
// Deprecated: it cannot tell a replay; use Verify.
func VerifyLegacy(secret string, body []byte, signature string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(strings.TrimSpace(signature)))
}

// Requests to callon's API are signed the Standard Webhooks way over a
// payload that binds them to their endpoint: the method, a space, the
// path and query as callon receives them, a line break, then the body —
// so a signed request (or a webhook callon sent) cannot be replayed to
// another endpoint, or as another method. Any Standard Webhooks library
// signs it: sign the payload "POST /v1/dispatch\n<body>" with the id and
// timestamp.

// RequestPayload is what an API request's signature covers besides its
// id and timestamp: "<METHOD> <path>\n<body>", path with its query.
func RequestPayload(method, path string, body []byte) []byte {
	return append([]byte(method+" "+path+"\n"), body...)
}

// SignAPIRequest sets the Standard Webhooks headers of a request to
// callon's API with id, sent at at, over RequestPayload(method, path,
// body). Clients of the API written in Go use it.
func SignAPIRequest(h http.Header, secret, id string, at time.Time, method, path string, body []byte) {
	SignRequest(h, secret, id, at, RequestPayload(method, path, body))
}

// VerifyAPIRequest checks a request to callon's API as Verify checks a
// message, over RequestPayload(method, path, body).
func VerifyAPIRequest(secret, method, path string, h http.Header, body []byte, now time.Time) (id string, err error) {
	return Verify(secret, h, RequestPayload(method, path, body), now)
}

// CallbackSecret is the secret callon signs its callbacks with (the
// Standard Webhooks headers, and X-Callon-Signature): derived from the
// API's secret for that purpose alone, so a callback's signature is never
// one the API accepts. It is "whsec_" and the base64 HMAC-SHA256, keyed
// with apiSecret (as Verify keys it), of "callon callback signing key v1".
// A receiver verifies callbacks with it (Verify, or any Standard Webhooks
// library).
func CallbackSecret(apiSecret string) string {
	m := hmac.New(sha256.New, key(apiSecret))
	m.Write([]byte("callon callback signing key v1"))
	return "whsec_" + base64.StdEncoding.EncodeToString(m.Sum(nil))
}
