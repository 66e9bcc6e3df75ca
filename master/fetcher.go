package master

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/callonbot/callon/internal/proc"
)

// Downloader fetches a file from the CDN (DefaultCDNURL). It refuses any address
// (or redirect) outside the CDN with ErrNotOnCDN, a file larger than max
// with ErrTooLarge, and a file the CDN no longer serves with ErrGone;
// any other error may pass on a later try.
type Downloader interface {
	Download(ctx context.Context, url string, max int64) (data []byte, contentType string, err error)
}

// AttachmentStore is what the fetcher needs from Postgres.
type AttachmentStore interface {
	// ClaimAttachments leases up to n pending files of open turns of
	// scope's sessions to owner, counting an attempt on each.
	ClaimAttachments(ctx context.Context, scope Scope, owner string, n int, lease time.Duration) ([]Attachment, error)
	// SaveAttachment records what a claimed file came to, if owner still
	// holds it (ErrStale otherwise); a resolved file wakes the session's
	// master.
	SaveAttachment(ctx context.Context, owner string, id int64, r AttachmentResult) error
}

// AttachmentResult is what a download came to.
type AttachmentResult struct {
	// State is stored, skipped or failed; or pending to try again after
	// RetryIn (or at once, with the attempt given back, when Release).
	State       AttachmentState
	Data        []byte
	ContentType string
	Size        int64
	Note        string
	RetryIn     time.Duration
	Release     bool
}

// FetcherConfig tunes the fetcher. Zero fields take the defaults.
type FetcherConfig struct {
	Owner       string
	Scope       Scope         // the sessions whose files this fetcher downloads
	MaxFile     int64         // bytes of one file (DefaultAttachmentMaxFile)
	Batch       int           // files claimed, and downloaded in parallel, at once (4)
	Lease       time.Duration // how long a claimed file is ours (1 min)
	Timeout     time.Duration // one download (30 s)
	MaxAttempts int           // downloads of one file before it fails (3)
	Poll        time.Duration // fallback when no wake-up comes (proc.IdlePoll with Wake, else 2 s)
	Wake        <-chan string
}

// Fetcher downloads the files attached to messages, outside the gateway's
// event handler: each file once, stored before the master sees it, with
// a timeout per download and a bounded number of tries. A file that
// cannot be had is a noted failure; its message is answered anyway.
type Fetcher struct {
	cfg   FetcherConfig
	store AttachmentStore
	dl    Downloader
	log   *slog.Logger
	soon  proc.Due // the next retry it put off
}

// NewFetcher returns the fetcher; Run starts it.
func NewFetcher(cfg FetcherConfig, store AttachmentStore, dl Downloader, logger *slog.Logger) *Fetcher {
	cfg.MaxFile = cmp.Or(cfg.MaxFile, DefaultAttachmentMaxFile)
	cfg.Batch = cmp.Or(cfg.Batch, 4)
	cfg.Lease = cmp.Or(cfg.Lease, time.Minute)
	cfg.Timeout = min(cmp.Or(cfg.Timeout, 30*time.Second), cfg.Lease/2)
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, 3)
	cfg.Poll = proc.PollFor(cfg.Poll, cfg.Wake, 2*time.Second)
	return &Fetcher{cfg: cfg, store: store, dl: dl, log: logger.With("component", "fetcher")}
}

// Run downloads pending files until ctx ends.
func (f *Fetcher) Run(ctx context.Context) error {
	proc.Drain(ctx, f.Flush, f.cfg.Batch, f.cfg.Poll, f.cfg.Wake, &f.soon, f.log, "claim attachments")
	return nil
}

// Flush claims one batch of pending files and downloads them in
// parallel. It returns how many it claimed.
func (f *Fetcher) Flush(ctx context.Context) (int, error) {
	return proc.Claim(ctx, func(ctx context.Context) ([]Attachment, error) {
		return f.store.ClaimAttachments(ctx, f.cfg.Scope, f.cfg.Owner, f.cfg.Batch, f.cfg.Lease)
	}, f.fetch)
}

// fetch downloads one claimed file and records the outcome.
func (f *Fetcher) fetch(ctx context.Context, a Attachment) {
	log := f.log.With("attachment_id", a.ID, "turn_id", a.TurnID, "name", a.Name)
	var r AttachmentResult
	if a.Attempts > f.cfg.MaxAttempts {
		// Claimed again after a process died mid-download, once too often.
		r = AttachmentResult{State: AttachmentFailed, Note: "the download failed"}
	} else {
		dctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
		data, ct, err := f.dl.Download(dctx, a.URL, f.cfg.MaxFile)
		cancel()
		if ctx.Err() != nil {
			r = AttachmentResult{State: AttachmentPending, Release: true} // shutting down: the next start tries again
		} else {
			r = f.result(a, data, ct, err)
		}
		if err != nil && ctx.Err() == nil {
			log.Warn("download attachment", "attempt", a.Attempts, "state", r.State, "err", err)
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := f.store.SaveAttachment(sctx, f.cfg.Owner, a.ID, r); err != nil && !errors.Is(err, ErrStale) {
		log.Warn("save attachment", "err", err)
	} else if err == nil && r.State != AttachmentPending {
		log.Debug("attachment resolved", "state", r.State, "size", r.Size, "note", r.Note)
	} else if err == nil && r.RetryIn > 0 {
		f.soon.Set(time.Now().Add(r.RetryIn))
	}
}

// result is what a download came to: the file, checked to be what its
// kind promises, or why it was not had.
func (f *Fetcher) result(a Attachment, data []byte, ct string, err error) AttachmentResult {
	switch {
	case errors.Is(err, ErrTooLarge):
		return AttachmentResult{State: AttachmentSkipped, Note: "larger than the " + FormatSize(f.cfg.MaxFile) + " limit per file"}
	case errors.Is(err, ErrNotOnCDN):
		return AttachmentResult{State: AttachmentSkipped, Note: noteNotOnCDN}
	case errors.Is(err, ErrGone):
		return AttachmentResult{State: AttachmentFailed, Note: noteGone}
	case err != nil && a.Attempts >= f.cfg.MaxAttempts:
		return AttachmentResult{State: AttachmentFailed, Note: "the download failed"}
	case err != nil:
		return AttachmentResult{State: AttachmentPending, RetryIn: proc.Backoff(a.Attempts, 2*time.Second, time.Minute)}
	}
	r := AttachmentResult{State: AttachmentStored, Data: data, Size: int64(len(data)), ContentType: cmp.Or(a.ContentType, ct)}
	switch a.Kind {
	case KindImage:
		// Models are given the type the bytes have, whatever the name says.
		if sniffed := http.DetectContentType(data); imageTypes[sniffed] {
			r.ContentType = sniffed
		} else {
			r = AttachmentResult{State: AttachmentSkipped, Size: r.Size, Note: "not a PNG, JPEG, GIF or WebP image"}
		}
	case KindText:
		if bytes.IndexByte(data, 0) >= 0 {
			r = AttachmentResult{State: AttachmentSkipped, Size: r.Size, Note: "it is not a text file"}
		}
	}
	return r
}
