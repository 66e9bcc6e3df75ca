// Package fetch gets web pages for models to read: http and https only,
// bounded in time, size and redirects, turned into text, and never from an
// address that is not on the public internet (loopback, private,
// link-local, metadata…) unless the operator allows it.
package fetch

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/html/charset"
)

// Defaults for Options.
const (
	DefaultTimeout      = 20 * time.Second
	DefaultMaxBody      = 2 << 20
	DefaultMaxRedirects = 5
	DefaultUserAgent    = "callon-fetch/1"
)

// Options configure a Fetcher. Zero values take the defaults.
type Options struct {
	// Allow lists what may be fetched even though it is not public
	// (CALLON_FETCH_ALLOW): host names, "*.example.com" for the
	// subdomains of one, addresses, and CIDRs such as 10.0.0.0/8.
	Allow []string
	// Timeout bounds a whole fetch: redirects, headers and body.
	Timeout time.Duration
	// MaxBody is how many bytes of a body are read; the rest is dropped.
	MaxBody int64
	// MaxRedirects is how many redirects are followed.
	MaxRedirects int
	// UserAgent is sent with every request.
	UserAgent string
}

// Fetcher gets pages. It is safe for concurrent use.
type Fetcher struct {
	client    *http.Client
	transport *http.Transport
	timeout   time.Duration
	maxBody   int64
	userAgent string
}

// New returns a Fetcher, or an error naming a bad allow list entry.
func New(opts Options) (*Fetcher, error) {
	allow, err := parseAllowList(opts.Allow)
	if err != nil {
		return nil, err
	}
	maxRedirects := cmp.Or(opts.MaxRedirects, DefaultMaxRedirects)
	transport := guardedTransport(allow)
	f := &Fetcher{
		transport: transport,
		timeout:   cmp.Or(opts.Timeout, DefaultTimeout),
		maxBody:   cmp.Or(opts.MaxBody, DefaultMaxBody),
		userAgent: cmp.Or(opts.UserAgent, DefaultUserAgent),
	}
	f.client = &http.Client{
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("stopped after %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("redirect to a %s: URL refused", req.URL.Scheme)
			}
			return nil
		},
	}
	return f, nil
}

// Transport returns an HTTP transport that connects only where a fetch
// may (public addresses, and what allow lists, as in Options.Allow), or
// an error naming a bad allow list entry: for other requests to URLs
// that outsiders choose, such as the API's callbacks.
func Transport(allow []string) (*http.Transport, error) {
	l, err := parseAllowList(allow)
	if err != nil {
		return nil, err
	}
	return guardedTransport(l), nil
}

func guardedTransport(allow allowList) *http.Transport {
	dialer := &guardedDialer{allow: allow, dialer: net.Dialer{Timeout: 10 * time.Second}}
	// No proxy: the address checks must apply to the real destination.
	return &http.Transport{
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 15 * time.Second,
	}
}

// Close closes idle connections. The Fetcher remains usable.
func (f *Fetcher) Close() { f.transport.CloseIdleConnections() }

// Page is a fetched page.
type Page struct {
	URL         string // the final URL, after redirects
	Status      string // "200 OK"
	StatusCode  int
	ContentType string // the media type, without parameters
	// Text is the body as text: HTML made readable, other text as it
	// is. It is "" for content that is not text.
	Text string
	// IsText says whether the body was text.
	IsText bool
	// Read is how many bytes of the body were read; Truncated says the
	// body was longer and the rest was dropped.
	Read      int64
	Truncated bool
}

// Fetch GETs rawURL. An HTTP error status is a Page, not an error; an
// error is a URL that cannot be fetched, a refused address (BlockedError,
// found with errors.As), a timeout or a broken connection.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Page, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return nil, fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("only http:// and https:// URLs can be fetched")
	}
	if u.Hostname() == "" {
		return nil, errors.New("the URL has no host")
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("User-Agent", f.userAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/*;q=0.9,application/json;q=0.9,*/*;q=0.5")
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, f.describe(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("read body: %w", f.describe(ctx, err))
	}
	p := &Page{
		URL:        resp.Request.URL.String(),
		Status:     resp.Status,
		StatusCode: resp.StatusCode,
	}
	if int64(len(body)) > f.maxBody {
		body, p.Truncated = body[:f.maxBody], true
	}
	p.Read = int64(len(body))
	header := resp.Header.Get("Content-Type")
	p.ContentType, _, _ = mime.ParseMediaType(header)
	if p.ContentType == "" {
		header = http.DetectContentType(body)
		p.ContentType, _, _ = mime.ParseMediaType(header)
	}
	kind := textKind(p.ContentType)
	if kind == "" {
		return p, nil
	}
	enc, _, _ := charset.DetermineEncoding(body, header)
	if decoded, err := enc.NewDecoder().Bytes(body); err == nil {
		body = decoded
	}
	p.IsText = true
	if kind == "html" {
		p.Text = HTMLText(bytes.NewReader(body))
	} else {
		p.Text = strings.ToValidUTF8(string(body), "\uFFFD")
	}
	return p, nil
}

// describe makes a transport error readable: the refusal or the timeout
// rather than the layers of wrapping around it.
func (f *Fetcher) describe(ctx context.Context, err error) error {
	var blocked *BlockedError
	switch {
	case errors.As(err, &blocked):
		return blocked
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("timed out after %s", f.timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// textKind says how to read a media type: "html", "text", or "" for
// content that is not text.
func textKind(mediaType string) string {
	switch {
	case mediaType == "text/html", mediaType == "application/xhtml+xml":
		return "html"
	case strings.HasPrefix(mediaType, "text/"),
		mediaType == "application/json", strings.HasSuffix(mediaType, "+json"),
		mediaType == "application/xml", strings.HasSuffix(mediaType, "+xml"),
		mediaType == "application/javascript", mediaType == "application/x-ndjson",
		mediaType == "application/yaml", mediaType == "application/x-yaml", mediaType == "application/toml":
		return "text"
	}
	return ""
}
