package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

var (
	_ master.MemoryStore      = (*Store)(nil)
	_ master.MemoryAdminStore = (*Store)(nil)
)

// noteJSON is a note as the reads that fold notes into another statement
// return them (json_agg).
const noteJSON = `json_build_object('id', n.id, 'guild', n.guild_id, 'channel', n.channel_id, 'text', n.text,
	'author', n.author_id, 'session', n.session_id, 'turn', n.turn_id, 'created', n.created_at, 'updated', n.updated_at)`

// sessionNotesColumn is a select item over a session s: its channel's
// notes when it has memory (NULL when not). TurnReads's statement for the
// session reads it, so memory costs no statement of its own.
const sessionNotesColumn = `CASE WHEN s.memory THEN (SELECT coalesce(json_agg(` + noteJSON + ` ORDER BY n.id), '[]')
		FROM channel_notes n WHERE n.guild_id = s.guild_id AND n.channel_id = s.channel_id) END`

// taskNotesSQL is a select item, over a session s, reading the notes whose
// ids are in ids (an expression: a task's note_ids) that s's channel
// still keeps (a note forgotten since the task was given it is not).
func taskNotesSQL(ids string) string {
	return `(SELECT coalesce(json_agg(` + noteJSON + ` ORDER BY n.id), '[]')
	FROM channel_notes n WHERE n.id = ANY (` + ids + `) AND n.guild_id = s.guild_id AND n.channel_id = s.channel_id)`
}

// scanNotes decodes notes read as JSON; NULL is none.
func scanNotes(raw []byte, notes *[]master.Note) error {
	if raw == nil {
		return nil
	}
	var rows []struct {
		ID      int64     `json:"id"`
		Guild   string    `json:"guild"`
		Channel string    `json:"channel"`
		Text    string    `json:"text"`
		Author  string    `json:"author"`
		Session int64     `json:"session"`
		Turn    int64     `json:"turn"`
		Created time.Time `json:"created"`
		Updated time.Time `json:"updated"`
	}
	if err := json.Unmarshal(raw, &rows); err != nil {
		return fmt.Errorf("notes: %w", err)
	}
	for _, r := range rows {
		*notes = append(*notes, master.Note{ID: r.ID, GuildID: r.Guild, ChannelID: r.Channel, Text: r.Text, AuthorID: r.Author,
			SessionID: r.Session, TurnID: r.Turn, CreatedAt: r.Created, UpdatedAt: r.Updated})
	}
	return nil
}

const noteColumns = `n.id, n.guild_id, n.channel_id, n.text, n.author_id, n.session_id, n.turn_id, n.created_at, n.updated_at`

func scanNote(row pgx.CollectableRow) (master.Note, error) {
	var n master.Note
	err := row.Scan(&n.ID, &n.GuildID, &n.ChannelID, &n.Text, &n.AuthorID, &n.SessionID, &n.TurnID, &n.CreatedAt, &n.UpdatedAt)
	return n, err
}

// lockNotes serializes the writes to one channel's notes, so the cap
// holds against concurrent masters.
func lockNotes(ctx context.Context, tx pgx.Tx, guildID, channelID string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('notes/' || $1 || '/' || $2, 0))`, guildID, channelID)
	return err
}

// RememberNote saves a note for the guarded turn's master: its exact text
// again refreshes the note (updated_at), a new one is added while the
// channel holds fewer than max (master.ErrMemoryFull otherwise), and the
// change is in memory_changes, in one transaction.
func (s *Store) RememberNote(ctx context.Context, g master.Guard, n master.Note, max int) (master.Note, error) {
	text, ok := master.CleanNote(n.Text)
	if !ok {
		return master.Note{}, errors.New("remember: empty note")
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return master.Note{}, fmt.Errorf("remember: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := checkGuard(ctx, tx, g); err != nil {
		return master.Note{}, fmt.Errorf("remember: %w", err)
	}
	if err := lockNotes(ctx, tx, n.GuildID, n.ChannelID); err != nil {
		return master.Note{}, fmt.Errorf("remember: %w", err)
	}
	rows, err := tx.Query(ctx, `
		WITH old AS (
			UPDATE channel_notes n SET updated_at = now()
			WHERE n.guild_id = $1 AND n.channel_id = $2 AND n.text = $3
			RETURNING `+noteColumns+`
		), added AS (
			INSERT INTO channel_notes AS n (guild_id, channel_id, text, author_id, session_id, turn_id)
			SELECT $1, $2, $3, $4, $5, $6
			WHERE NOT EXISTS (SELECT 1 FROM old)
			  AND (SELECT count(*) FROM channel_notes WHERE guild_id = $1 AND channel_id = $2) < $7
			RETURNING `+noteColumns+`
		)
		SELECT * FROM old UNION ALL SELECT * FROM added`,
		n.GuildID, n.ChannelID, text, n.AuthorID, n.SessionID, n.TurnID, max)
	if err != nil {
		return master.Note{}, fmt.Errorf("remember: %w", err)
	}
	saved, err := pgx.CollectExactlyOneRow(rows, scanNote)
	if errors.Is(err, pgx.ErrNoRows) {
		return master.Note{}, master.ErrMemoryFull
	}
	if err != nil {
		return master.Note{}, fmt.Errorf("remember: %w", err)
	}
	if err := recordMemoryChange(ctx, tx, n.GuildID, n.ChannelID, "remember", []int64{saved.ID}, "", g.SessionID, g.TurnID); err != nil {
		return master.Note{}, fmt.Errorf("remember: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return master.Note{}, fmt.Errorf("remember: %w", err)
	}
	return saved, nil
}

// ForgetNotes deletes notes of a channel for the guarded turn's master
// and records it; it returns how many it deleted.
func (s *Store) ForgetNotes(ctx context.Context, g master.Guard, guildID, channelID string, ids []int64) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("forget: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := checkGuard(ctx, tx, g); err != nil {
		return 0, fmt.Errorf("forget: %w", err)
	}
	n, err := deleteNotes(ctx, tx, guildID, channelID, ids, "forget", "", g.SessionID, g.TurnID)
	if err != nil {
		return 0, fmt.Errorf("forget: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("forget: %w", err)
	}
	return n, nil
}

// deleteNotes deletes a channel's notes by id (every one for nil ids)
// and records the change when it deleted any.
func deleteNotes(ctx context.Context, tx pgx.Tx, guildID, channelID string, ids []int64, action, by string, sessionID, turnID int64) (int, error) {
	rows, err := tx.Query(ctx, `DELETE FROM channel_notes WHERE guild_id = $1 AND channel_id = $2 AND ($3::bigint[] IS NULL OR id = ANY ($3))
		RETURNING id`, guildID, channelID, ids)
	if err != nil {
		return 0, err
	}
	deleted, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, err
	}
	if len(deleted) > 0 {
		if err := recordMemoryChange(ctx, tx, guildID, channelID, action, deleted, by, sessionID, turnID); err != nil {
			return 0, err
		}
	}
	return len(deleted), nil
}

func recordMemoryChange(ctx context.Context, tx pgx.Tx, guildID, channelID, action string, ids []int64, by string, sessionID, turnID int64) error {
	_, err := tx.Exec(ctx, `INSERT INTO memory_changes (guild_id, channel_id, action, note_ids, by_user, session_id, turn_id)
		VALUES ($1, $2, $3, $4, $5, nullif($6, 0), nullif($7, 0))`, guildID, channelID, action, ids, by, sessionID, turnID)
	if err != nil {
		return fmt.Errorf("record memory change: %w", err)
	}
	return nil
}

// Notes returns a channel's notes, most recently remembered first.
func (s *Store) Notes(ctx context.Context, guildID, channelID string) ([]master.Note, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+noteColumns+` FROM channel_notes n
		WHERE n.guild_id = $1 AND n.channel_id = $2 ORDER BY n.updated_at DESC, n.id DESC`, guildID, channelID)
	if err != nil {
		return nil, fmt.Errorf("notes: %w", err)
	}
	notes, err := pgx.CollectRows(rows, scanNote)
	if err != nil {
		return nil, fmt.Errorf("notes: %w", err)
	}
	return notes, nil
}

// ForgetNote deletes one note of a channel for an admin (by) and records
// it; false when the channel has no such note.
func (s *Store) ForgetNote(ctx context.Context, guildID, channelID string, id int64, by string) (bool, error) {
	n, err := s.adminDelete(ctx, guildID, channelID, []int64{id}, "forget", by)
	return n > 0, err
}

// ClearNotes deletes every note of a channel for an admin (by) and
// records it; it returns how many.
func (s *Store) ClearNotes(ctx context.Context, guildID, channelID, by string) (int, error) {
	return s.adminDelete(ctx, guildID, channelID, nil, "clear", by)
}

func (s *Store) adminDelete(ctx context.Context, guildID, channelID string, ids []int64, action, by string) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("%s notes: %w", action, err)
	}
	defer tx.Rollback(ctx)
	n, err := deleteNotes(ctx, tx, guildID, channelID, ids, action, by, 0, 0)
	if err != nil {
		return 0, fmt.Errorf("%s notes: %w", action, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("%s notes: %w", action, err)
	}
	return n, nil
}

// purgeNotes deletes notes not remembered since cutoff, batch at a time.
func (s *Store) purgeNotes(ctx context.Context, cutoff time.Time, batch int, p *master.Purged) error {
	for {
		tag, err := s.pool.Exec(ctx, `DELETE FROM channel_notes WHERE id IN (
			SELECT id FROM channel_notes WHERE updated_at < $1 LIMIT $2)`, cutoff, batch)
		if err != nil {
			return fmt.Errorf("purge notes: %w", err)
		}
		p.Notes += int(tag.RowsAffected())
		if tag.RowsAffected() < int64(batch) {
			return nil
		}
	}
}
