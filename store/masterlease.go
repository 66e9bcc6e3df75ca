package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// The master lease and what the master reads to decide: which sessions
// need it (PendingSessions), taking and giving back a session's lease with
// its turn opened (StartTurn), and the history a prompt shows.

// PendingSessions lists active sessions of scope whose next turn needs
// its master now: not started yet, or every task of its current round has ended (a
// task waiting for an approval has not), and none of its files still to
// download. A session's next turn is its running one, else its first
// queued one in message order. Sessions whose master is leased to another
// live owner are left out.
func (s *Store) PendingSessions(ctx context.Context, scope master.Scope, owner string) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT s.id
		FROM sessions s
		CROSS JOIN LATERAL (
			SELECT u.id, u.round, u.not_before FROM turns u
			WHERE u.session_id = s.id AND u.state IN ('queued', 'running')
			ORDER BY u.state = 'running' DESC, u.sort_key, u.id
			LIMIT 1
		) u
		WHERE s.state = 'active' AND s.surface = $2 AND ($3 = '' OR s.attached_to = $3)
		  AND (s.master_owner IS NULL OR s.master_owner = $1 OR s.master_lease_until < now())
		  AND NOT EXISTS (SELECT 1 FROM tasks k
		                  WHERE k.turn_id = u.id AND k.round = u.round AND k.state IN ('queued', 'running', 'approval'))
		  AND NOT EXISTS (SELECT 1 FROM attachments a WHERE a.turn_id = u.id AND a.state = 'pending')
		  AND (u.not_before IS NULL OR u.not_before <= now())
		ORDER BY u.id`, owner, scope.Of(), scope.Attached)
	if err != nil {
		return nil, fmt.Errorf("pending sessions: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("pending sessions: %w", err)
	}
	return ids, nil
}

// AcquireMaster leases a session's master to owner, or extends owner's
// lease. It reports false when another owner holds a live lease or the
// session is no longer active.
func (s *Store) AcquireMaster(ctx context.Context, sessionID int64, owner string, lease time.Duration) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE sessions SET master_owner = $2, master_lease_until = now() + $3::interval
		WHERE id = $1 AND state = 'active'
		  AND (master_owner IS NULL OR master_owner = $2 OR master_lease_until < now())`,
		sessionID, owner, lease)
	if err != nil {
		return false, fmt.Errorf("acquire master: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// StartTurn leases a session's master to owner (or extends owner's
// lease) and opens its turn, as AcquireMaster then OpenTurn do, in one
// statement: the start of a master step. master.ErrNotFound when another
// owner holds a live lease, the session is no longer active, or it has no
// turn to open (the lease is then taken all the same: release it).
func (s *Store) StartTurn(ctx context.Context, sessionID int64, owner string, lease time.Duration) (master.Turn, error) {
	turn, err := scanTurn(s.pool.QueryRow(ctx, `
		WITH leased AS (
			UPDATE sessions SET master_owner = $2, master_lease_until = now() + $3::interval
			WHERE id = $1 AND state = 'active'
			  AND (master_owner IS NULL OR master_owner = $2 OR master_lease_until < now())
			RETURNING id
		), next AS (
			SELECT t.id FROM turns t JOIN leased l ON l.id = t.session_id
			WHERE t.state IN ('queued', 'running')
			`+nextTurnOrder+`
		)
		UPDATE turns u SET state = 'running', updated_at = CASE WHEN u.state = 'queued' THEN now() ELSE u.updated_at END
		FROM next WHERE u.id = next.id
		RETURNING `+turnColumns, sessionID, owner, lease))
	if err != nil && !errors.Is(err, master.ErrNotFound) {
		return turn, fmt.Errorf("start turn: %w", err)
	}
	return turn, err
}

// ReleaseMaster gives up owner's lease on a session's master.
func (s *Store) ReleaseMaster(ctx context.Context, sessionID int64, owner string) error {
	_, err := s.pool.Exec(ctx, `UPDATE sessions SET master_owner = NULL, master_lease_until = NULL
		WHERE id = $1 AND master_owner = $2`, sessionID, owner)
	if err != nil {
		return fmt.Errorf("release master: %w", err)
	}
	return nil
}

// OpenTurn returns the session's running turn, else its first queued one
// in message order, moving it to running; master.ErrNotFound when there
// is none.
func (s *Store) OpenTurn(ctx context.Context, sessionID int64) (master.Turn, error) {
	turn, err := scanTurn(s.pool.QueryRow(ctx, `
		WITH next AS (
			SELECT t.id FROM turns t WHERE t.session_id = $1 AND t.state IN ('queued', 'running')
			`+nextTurnOrder+`
		)
		UPDATE turns u SET state = 'running', updated_at = CASE WHEN u.state = 'queued' THEN now() ELSE u.updated_at END
		FROM next WHERE u.id = next.id
		RETURNING `+turnColumns, sessionID))
	if err != nil && !errors.Is(err, master.ErrNotFound) {
		return turn, fmt.Errorf("open turn: %w", err)
	}
	return turn, err
}

// History returns up to limit finished turns of a session before turn
// beforeID, oldest first, each with the last answer the team posted for
// it (its reply, or the question it ended on). Turns that ended in a
// question keep their task results. It is one statement when no turn
// asked (the master reads it before every decision), else two: a done
// turn and its tasks no longer change, so they need no common snapshot.
func (s *Store) History(ctx context.Context, sessionID, beforeID int64, limit int) ([]master.Exchange, error) {
	rows, err := s.pool.Query(ctx, historySQL, sessionID, beforeID, limit)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	history, err := collectHistory(rows)
	if err != nil {
		return nil, err
	}
	return historyResults(ctx, s.pool, history)
}

func collectHistory(rows pgx.Rows) ([]master.Exchange, error) {
	history, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Exchange, error) {
		var e master.Exchange
		err := r.Scan(&e.TurnID, &e.AuthorID, &e.AuthorBot, &e.Message, &e.Answer, &e.Asked)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return history, nil
}

// historyResults adds their tasks' results to the exchanges that ended in
// a question: one more statement when there is any.
func historyResults(ctx context.Context, q querier, history []master.Exchange) ([]master.Exchange, error) {
	var asked []int64
	index := map[int64]int{}
	for i, e := range history {
		if e.Asked {
			asked = append(asked, e.TurnID)
			index[e.TurnID] = i
		}
	}
	if len(asked) > 0 {
		rows, err := q.Query(ctx, `SELECT `+taskColumns+` FROM tasks t WHERE t.turn_id = ANY ($1) ORDER BY t.id`, asked)
		if err != nil {
			return nil, fmt.Errorf("history: results: %w", err)
		}
		tasks, err := collectTasks(rows)
		if err != nil {
			return nil, fmt.Errorf("history: results: %w", err)
		}
		for _, t := range tasks {
			i := index[t.TurnID]
			history[i].Results = append(history[i].Results, t)
		}
	}
	return history, nil
}
