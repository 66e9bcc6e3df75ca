package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

var _ master.ReviewStore = (*Store)(nil)

// TurnReview returns a turn's review, or master.ErrNotFound.
func (s *Store) TurnReview(ctx context.Context, turnID int64) (master.Review, error) {
	var r master.Review
	var exchange, objections []byte
	var verdict *string
	err := s.pool.QueryRow(ctx, `SELECT turn_id, draft, exchange, state, verdict, objections, caveat
		FROM turn_reviews WHERE turn_id = $1`, turnID).Scan(&r.TurnID, &r.Draft, &exchange, &r.State, &verdict, &objections, &r.Caveat)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, master.ErrNotFound
	}
	if err != nil {
		return r, fmt.Errorf("turn review: %w", err)
	}
	if verdict != nil {
		r.Verdict = master.Verdict(*verdict)
	}
	if err := json.Unmarshal(exchange, &r.Exchange); err != nil {
		return r, fmt.Errorf("turn review: exchange: %w", err)
	}
	if err := json.Unmarshal(objections, &r.Objections); err != nil {
		return r, fmt.Errorf("turn review: objections: %w", err)
	}
	return r, nil
}

// StartReview saves a guarded turn's draft, to be reviewed, in one
// statement (the guard checked in it).
func (s *Store) StartReview(ctx context.Context, g master.Guard, r master.Review) error {
	exchange, err := marshalJSON(cleanLines(r.Exchange))
	if err != nil {
		return fmt.Errorf("start review: %w", err)
	}
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO turn_reviews (turn_id, session_id, draft, exchange)
		SELECT u.id, u.session_id, $5, $6 FROM turns u JOIN sessions s ON s.id = u.session_id
		WHERE u.id = $1 AND u.session_id = $2 AND u.state = 'running' AND u.round = $3
		  AND s.state = 'active' AND s.master_owner = $4 AND s.master_lease_until > now()
		ON CONFLICT (turn_id) DO NOTHING`,
		g.TurnID, g.SessionID, g.Round, g.Owner, cleanText(r.Draft), exchange)
	if err != nil {
		return fmt.Errorf("start review: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("start review of turn %d: %w", g.TurnID, master.ErrStale)
	}
	return nil
}

// DecideReview saves the verdict on a guarded turn's draft and its
// signal, in one transaction.
func (s *Store) DecideReview(ctx context.Context, g master.Guard, r master.Review) error {
	objections, err := marshalJSON(cleanAll(r.Objections))
	if err != nil {
		return fmt.Errorf("decide review: %w", err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("decide review: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := checkGuard(ctx, tx, g); err != nil {
		return fmt.Errorf("decide review: %w", err)
	}
	tag, err := tx.Exec(ctx, `UPDATE turn_reviews SET state = $2, verdict = $3, objections = $4, caveat = $5, decided_at = now()
		WHERE turn_id = $1 AND state = 'reviewing'`, g.TurnID, r.State, r.Verdict, objections, cleanText(r.Caveat))
	if err != nil {
		return fmt.Errorf("decide review: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("decide review of turn %d: %w", g.TurnID, master.ErrStale)
	}
	kind, payload := master.ReviewSignal(r)
	if _, err := addSignal(ctx, tx, g.SessionID, 0, kind, payload); err != nil {
		return fmt.Errorf("decide review: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("decide review: %w", err)
	}
	return nil
}

// cleanLines makes members' parts storable.
func cleanLines(lines []master.Line) []master.Line {
	out := make([]master.Line, len(lines))
	for i, l := range lines {
		out[i] = master.Line{Member: cleanText(l.Member), Text: cleanText(l.Text)}
	}
	return out
}

// teamPresence reads what /team shows of a team's features: its
// channel's notes and its verdicts, in one statement.
func teamPresence(ctx context.Context, tx pgx.Tx, s master.Session) (master.TeamPresence, error) {
	var p master.TeamPresence
	err := tx.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM channel_notes WHERE guild_id = $2 AND channel_id = $3)::int,
		count(*) FILTER (WHERE verdict IN ('pass', 'caveat'))::int, count(*) FILTER (WHERE verdict = 'revise')::int,
		count(*) FILTER (WHERE verdict = 'skipped')::int
		FROM turn_reviews WHERE session_id = $1`, s.ID, s.GuildID, s.ChannelID).Scan(&p.Notes, &p.Passed, &p.Revised, &p.Skipped)
	if err != nil {
		return p, fmt.Errorf("team presence: %w", err)
	}
	return p, nil
}
