package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// Transcript reads a session's turns in message order, and for each (at
// the same index) the last answer the team posted for it: its reply, or
// the question it ended on (Asked), "" when none. It reads only: callon
// replay compares another master's decisions with these.
func (s *Store) Transcript(ctx context.Context, sessionID int64) ([]master.Turn, []master.Exchange, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+turnColumns+`,
		       coalesce((SELECT string_agg(o.content, E'\n' ORDER BY o.part) FROM outbox o
		                 WHERE o.turn_id = u.id AND o.kind = last.kind AND o.seq = last.seq), ''),
		       coalesce(last.kind = 'question', false)
		FROM turns u
		LEFT JOIN LATERAL (
			SELECT o.kind, o.seq FROM outbox o
			WHERE o.turn_id = u.id AND o.kind IN ('reply', 'question')
			ORDER BY o.id DESC LIMIT 1
		) last ON true
		WHERE u.session_id = $1
		ORDER BY u.sort_key, u.id`, sessionID)
	if err != nil {
		return nil, nil, fmt.Errorf("transcript: %w", err)
	}
	type entry struct {
		turn   master.Turn
		answer master.Exchange
	}
	entries, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (entry, error) {
		var e entry
		var err error
		e.turn, err = scanTurn(r, &e.answer.Answer, &e.answer.Asked)
		e.answer.TurnID, e.answer.AuthorID, e.answer.AuthorBot, e.answer.Message = e.turn.ID, e.turn.AuthorID, e.turn.AuthorBot, e.turn.Content
		return e, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("transcript: %w", err)
	}
	turns := make([]master.Turn, len(entries))
	answers := make([]master.Exchange, len(entries))
	for i, e := range entries {
		turns[i], answers[i] = e.turn, e.answer
	}
	return turns, answers, nil
}
