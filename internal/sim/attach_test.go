package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// files are the files a user attaches to a message, now and then: text
// to download, or a file skipped at once (too large, of a type no model
// reads).
func (s *sequence) files() []master.IncomingAttachment {
	if s.rng.IntN(4) > 0 {
		return nil
	}
	var out []master.IncomingAttachment
	for range 1 + s.rng.IntN(2) {
		s.texts++
		f := master.IncomingAttachment{ID: fmt.Sprint(s.texts), Filename: fmt.Sprintf("file-%d.txt", s.texts), ContentType: "text/plain", Size: 10}
		switch s.rng.IntN(6) {
		case 0:
			f.Size = 100 << 20
		case 1:
			f.Filename, f.ContentType = fmt.Sprintf("file-%d.pdf", s.texts), "application/pdf"
		}
		f.URL = master.DefaultCDNURL + "/attachments/1/" + f.ID + "/" + f.Filename
		out = append(out, f)
	}
	return out
}

// cdn is Discord's CDN as the sequence's fetcher meets it: mostly the
// file, now and then a failure that may pass, a file gone, or one larger
// than its declared size.
type cdn struct{ seq *sequence }

func (c cdn) Download(_ context.Context, url string, _ int64) ([]byte, string, error) {
	c.seq.downloads[url]++
	if n := c.seq.downloads[url]; n > 3 {
		c.seq.fatalf("%s downloaded %d times: the fetcher tries a file at most 3 times", url, n)
	}
	switch r := c.seq.rng.IntN(20); {
	case r < 4:
		return nil, "", errors.New("502 Bad Gateway")
	case r < 5:
		return nil, "", master.ErrGone
	case r < 6:
		return nil, "", master.ErrTooLarge
	}
	return []byte(c.seq.text("content")), "text/plain", nil
}

// fetch downloads pending files, or dies in the middle of a download: the
// claim stays until its lease lapses (expire).
func (s *sequence) fetch() {
	if s.rng.IntN(8) == 0 {
		if _, err := s.st.ClaimAttachments(s.ctx, master.Scope{}, "dead fetcher", 1, time.Hour); err != nil {
			s.fatalf("ClaimAttachments: %v", err)
		}
		return
	}
	for range 3 {
		n, err := s.fetcher.Flush(s.ctx)
		if err != nil {
			s.fatalf("fetch: %v", err)
		}
		if n == 0 {
			return
		}
	}
}

// checkFiles holds after every event: the master never decided on a turn
// while one of its files was pending. (The CDN checks that no file is
// downloaded more than three times.)
func (s *sequence) checkFiles() {
	s.t.Helper()
	var early int
	if err := s.pool.QueryRow(s.ctx, `
		SELECT count(*) FROM turns u WHERE u.master_calls > 0
		  AND EXISTS (SELECT 1 FROM attachments a WHERE a.turn_id = u.id AND a.state = 'pending')`).Scan(&early); err != nil {
		s.fatalf("checkFiles: %v", err)
	}
	if early > 0 {
		s.fatalf("%d turns had the master decide while a file of theirs was still pending", early)
	}
}

// checkEndFiles holds once the sequence has settled: the files of every
// turn still active are resolved, and every reply the model wrote (not an
// apology) names each file of its message that was not read.
func (s *sequence) checkEndFiles(dissolved bool) {
	s.t.Helper()
	var pending int
	if err := s.pool.QueryRow(s.ctx, `SELECT count(*) FROM attachments WHERE state = 'pending'`).Scan(&pending); err != nil {
		s.fatalf("checkEndFiles: %v", err)
	}
	if pending > 0 && !dissolved {
		s.fatalf("%d files still pending once everything settled", pending)
	}
	rows, err := s.pool.Query(s.ctx, `
		SELECT u.message_id, a.name, a.state,
		       (SELECT string_agg(o.content, '' ORDER BY o.part) FROM outbox o WHERE o.turn_id = u.id AND o.kind = 'reply')
		FROM attachments a JOIN turns u ON u.id = a.turn_id
		WHERE a.state IN ('skipped', 'failed')`)
	if err != nil {
		s.fatalf("checkEndFiles: %v", err)
	}
	type unread struct {
		msg, name, state string
		reply            *string
	}
	files, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (unread, error) {
		var u unread
		return u, r.Scan(&u.msg, &u.name, &u.state, &u.reply)
	})
	if err != nil {
		s.fatalf("checkEndFiles: %v", err)
	}
	for _, f := range files {
		if f.reply == nil || strings.HasPrefix(*f.reply, "Sorry") {
			continue // no reply (a question, a dissolve), or an apology
		}
		if !strings.Contains(*f.reply, f.name) {
			s.fatalf("message %s: its reply does not name %s, %s:\n%s", f.msg, f.name, f.state, *f.reply)
		}
	}
}
