package bot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/callonbot/callon/master"

	"github.com/callonbot/callon/redact"
)

var _ master.Downloader = (*Downloader)(nil)

// maxRedirects bounds the redirects one download follows, each of them
// under the CDN too.
const maxRedirects = 3

// Downloader fetches the files attached to messages from Discord's CDN,
// and from nowhere else: a URL, or a redirect, outside its bases is never
// requested.
type Downloader struct {
	bases  []string
	client *http.Client
}

// NewDownloader returns a downloader for URLs under bases (DISCORD_CDN_URL
// and, by default, Discord's media proxy).
func NewDownloader(bases []string) *Downloader {
	d := &Downloader{bases: bases}
	d.client = &http.Client{
		Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 20 * time.Second,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       time.Minute,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return errors.New("too many redirects")
			}
			if !master.UnderBase(req.URL.String(), d.bases) {
				return master.ErrNotOnCDN
			}
			return nil
		},
	}
	return d
}

// Download fetches url, at most max bytes. It refuses a URL outside the
// CDN without a request (master.ErrNotOnCDN), a larger file
// (master.ErrTooLarge, without reading past max) and a file the CDN does
// not serve (master.ErrGone). Errors never carry the URL's signature.
func (d *Downloader) Download(ctx context.Context, u string, max int64) ([]byte, string, error) {
	where := redactURL(u)
	if !master.UnderBase(u, d.bases) {
		return nil, "", fmt.Errorf("download %s: %w", where, master.ErrNotOnCDN)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", fmt.Errorf("download %s: %w", where, err)
	}
	req.Header.Set("User-Agent", "DiscordBot (https://github.com/callonbot/callon, "+discordgo.VERSION+")")
	resp, err := d.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message holds the signed URL
		}
		return nil, "", fmt.Errorf("download %s: %w", where, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusGone:
		return nil, "", fmt.Errorf("download %s: %s: %w", where, resp.Status, master.ErrGone)
	default:
		return nil, "", fmt.Errorf("download %s: %s", where, resp.Status)
	}
	if resp.ContentLength > max {
		return nil, "", fmt.Errorf("download %s: %d bytes: %w", where, resp.ContentLength, master.ErrTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, "", fmt.Errorf("download %s: %w", where, err)
	}
	if int64(len(data)) > max {
		return nil, "", fmt.Errorf("download %s: over %d bytes: %w", where, max, master.ErrTooLarge)
	}
	return data, resp.Header.Get("Content-Type"), nil
}

// redactURL is u without its secrets: the CDN's signature is in its
// query.
func redactURL(u string) string { return redact.URL(u) }

// incomingAttachments maps a message's files to the master's form.
func incomingAttachments(atts []*discordgo.MessageAttachment) []master.IncomingAttachment {
	if len(atts) == 0 {
		return nil
	}
	out := make([]master.IncomingAttachment, 0, len(atts))
	for _, a := range atts {
		if a == nil {
			continue
		}
		out = append(out, master.IncomingAttachment{ID: a.ID, Filename: a.Filename, ContentType: a.ContentType,
			Size: int64(a.Size), URL: a.URL, ProxyURL: a.ProxyURL})
	}
	return out
}
