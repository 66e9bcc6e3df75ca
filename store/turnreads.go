package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// TurnReads reads what the master needs to decide on a turn — its tasks,
// the session with the turn's files and their content, its roster with
// each role's record in the channel (master.RoleTrack, in the roster's
// statement) and up to historyLimit earlier exchanges (see History) — in
// one round trip: the four statements go to Postgres as one pipelined
// batch. Each statement
// reads its own snapshot, as four separate reads would; a turn that ended
// in a question costs History's second statement after the batch.
// master.ErrNotFound when the session does not exist.
func (s *Store) TurnReads(ctx context.Context, sessionID, turnID int64, historyLimit int) (master.TurnReads, error) {
	var r master.TurnReads
	b := &pgx.Batch{}
	b.Queue(`SELECT `+taskColumns+` FROM tasks t WHERE t.turn_id = $1 ORDER BY t.round, t.id`, turnID)
	b.Queue(sessionFilesSQL, sessionID, turnID)
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
		var notes, files []byte
		if r.Session, err = scanSession(br.QueryRow(), &notes, &files); err != nil {
			return fmt.Errorf("session %d: %w", sessionID, err)
		}
		if err := scanNotes(notes, &r.Notes); err != nil {
			return err
		}
		if r.Attachments, err = scanFiles(files); err != nil {
			return fmt.Errorf("turn attachments: %w", err)
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

// sessionFilesSQL is session $1, as sessionColumns reads it, with its
// channel's notes (sessionNotesColumn) and the files of turn $2 (with
// their content) as a JSON list: the master's reads of a turn need all
// three, and most turns have no file, so files cost no statement of their
// own.
const sessionFilesSQL = `SELECT ` + sessionColumns + `, ` + sessionNotesColumn + `,
	(SELECT json_agg(json_build_object('id', a.id, 'session_id', a.session_id, 'turn_id', a.turn_id,
	        'position', a.position, 'discord_id', a.discord_id, 'name', a.name, 'content_type', a.content_type,
	        'size', a.size, 'url', a.url, 'kind', a.kind, 'state', a.state, 'note', a.note, 'attempts', a.attempts,
	        'data', translate(encode(a.data, 'base64'), E'\n', '')) ORDER BY a.position)
	 FROM attachments a WHERE a.turn_id = $2)
	FROM sessions s WHERE s.id = $1`

// scanFiles decodes sessionFilesSQL's files, as collectAttachments reads
// their rows.
func scanFiles(data []byte) ([]master.Attachment, error) {
	if data == nil {
		return nil, nil
	}
	var files []struct {
		ID          int64                  `json:"id"`
		SessionID   int64                  `json:"session_id"`
		TurnID      int64                  `json:"turn_id"`
		Position    int                    `json:"position"`
		DiscordID   string                 `json:"discord_id"`
		Name        string                 `json:"name"`
		ContentType string                 `json:"content_type"`
		Size        int64                  `json:"size"`
		URL         string                 `json:"url"`
		Kind        master.AttachmentKind  `json:"kind"`
		State       master.AttachmentState `json:"state"`
		Note        string                 `json:"note"`
		Attempts    int                    `json:"attempts"`
		Data        *string                `json:"data"`
	}
	if err := json.Unmarshal(data, &files); err != nil {
		return nil, err
	}
	out := make([]master.Attachment, len(files))
	for i, f := range files {
		a := master.Attachment{ID: f.ID, SessionID: f.SessionID, TurnID: f.TurnID, Position: f.Position, FileID: f.DiscordID,
			Name: f.Name, ContentType: f.ContentType, Size: f.Size, URL: f.URL, Kind: f.Kind, State: f.State,
			Note: f.Note, Attempts: f.Attempts}
		if f.Data != nil {
			d, err := base64.StdEncoding.DecodeString(*f.Data)
			if err != nil {
				return nil, fmt.Errorf("file %d: %w", f.ID, err)
			}
			a.Data = d
		}
		out[i] = a
	}
	return out, nil
}
