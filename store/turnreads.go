package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// TurnReads reads what the master needs to decide on a turn — its tasks,
// its files with their content, the session, its roster with each role's
// record in the channel (master.RoleTrack, in the roster's statement) and up to
// historyLimit earlier exchanges (see History) — in one round trip: the
// five statements go to Postgres as one pipelined batch. Each statement
// reads its own snapshot, as five separate reads would; a turn that ended
// in a question costs History's second statement after the batch.
// master.ErrNotFound when the session does not exist.
func (s *Store) TurnReads(ctx context.Context, sessionID, turnID int64, historyLimit int) (master.TurnReads, error) {
	var r master.TurnReads
	b := &pgx.Batch{}
	b.Queue(`SELECT `+taskColumns+` FROM tasks t WHERE t.turn_id = $1 ORDER BY t.round, t.id`, turnID)
	b.Queue(`SELECT `+attachmentColumns+`, a.data FROM attachments a
		WHERE a.turn_id = $1 ORDER BY a.position`, turnID)
	b.Queue(sessionNotesSQL, sessionID)
	b.Queue(rosterTracksSQL, sessionID)
	b.Queue(historySQL, sessionID, turnID, historyLimit)
	err := func() error {
		br := s.pool.SendBatch(ctx, b)
		defer br.Close()
		rows, err := br.Query()
		if err != nil {
			return fmt.Errorf("turn tasks: %w", err)
		}
		if r.Tasks, err = collectTasks(rows); err != nil {
			return fmt.Errorf("turn tasks: %w", err)
		}
		if rows, err = br.Query(); err != nil {
			return fmt.Errorf("turn attachments: %w", err)
		}
		if r.Attachments, err = collectAttachments(rows); err != nil {
			return fmt.Errorf("turn attachments: %w", err)
		}
		var notes []byte
		if r.Session, err = scanSession(br.QueryRow(), &notes); err != nil {
			return fmt.Errorf("session %d: %w", sessionID, err)
		}
		if err := scanNotes(notes, &r.Notes); err != nil {
			return err
		}
		if rows, err = br.Query(); err != nil {
			return fmt.Errorf("roster: %w", err)
		}
		if r.Roster, r.Tracks, err = collectRosterTracks(rows); err != nil {
			return fmt.Errorf("roster: %w", err)
		}
		if rows, err = br.Query(); err != nil {
			return fmt.Errorf("history: %w", err)
		}
		if r.History, err = collectHistory(rows); err != nil {
			return err
		}
		return br.Close()
	}()
	if err != nil {
		return master.TurnReads{}, fmt.Errorf("turn reads: %w", err)
	}
	if r.History, err = historyResults(ctx, s.pool, r.History); err != nil {
		return master.TurnReads{}, fmt.Errorf("turn reads: %w", err)
	}
	return r, nil
}
