package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// A turn's steps, each one guarded transaction: the master's decisions
// written (Finish, Delegate, Replan), its failures counted (FailTurn) and
// a turn given up (AbandonTurn). Recording turns is turns.go's.

// checkGuard locks the guarded turn, or returns master.ErrStale when the
// turn moved on, the session ended, or g.Owner lost the master lease.
func checkGuard(ctx context.Context, tx pgx.Tx, g master.Guard) (master.Turn, error) {
	turn, err := scanTurn(tx.QueryRow(ctx, `
		SELECT `+turnColumns+` FROM turns u JOIN sessions s ON s.id = u.session_id
		WHERE u.id = $1 AND u.session_id = $2 AND u.state = 'running' AND u.round = $3
		  AND s.state = 'active' AND s.master_owner = $4 AND s.master_lease_until > now()
		FOR UPDATE OF u`, g.TurnID, g.SessionID, g.Round, g.Owner))
	if errors.Is(err, master.ErrNotFound) {
		return turn, fmt.Errorf("turn %d round %d: %w", g.TurnID, g.Round, master.ErrStale)
	}
	return turn, err
}

// outNonce is a Discord nonce (at most 25 characters) unique to a part of
// a turn's reply, or of its seq-th question.
func outNonce(turnID int64, kind master.OutKind, seq, part int) string {
	if kind == master.OutQuestion {
		return fmt.Sprintf("t%dq%d.%d", turnID, seq, part)
	}
	return fmt.Sprintf("t%d%c%d", turnID, kind[0], part)
}

// Finish ends a guarded turn: its reply or question goes to the outbox,
// part by part, and the turn takes f.State, atomically (see FinishTurn).
func (s *Store) Finish(ctx context.Context, g master.Guard, f master.Finish) error {
	_, err := s.FinishTurn(ctx, g, f)
	return err
}

// FinishTurn ends a guarded turn: its reply or question goes to the
// outbox, part by part, the turn takes f.State (a question closes any
// other turn still waiting for an answer: at most one waits, the one that
// asked last, so an answer is never taken for the wrong question), and
// the session's outbox is woken, all in one statement, one round trip and
// one commit (the decision's model calls were charged as they returned). It reports whether
// another turn of the session is queued. The unique (turn, kind, seq,
// part) key allows one reply per turn; a turn may ask any number of
// questions (a turn resumed by the user's answer may ask again), each
// numbered by seq and posted once.
func (s *Store) FinishTurn(ctx context.Context, g master.Guard, f master.Finish) (next bool, err error) {
	parts := cleanAll(f.Parts)
	faces, err := personaColumn(f.Personas, len(parts))
	if err != nil {
		return false, fmt.Errorf("finish turn: %w", err)
	}
	payload := payloadOf(WakeOutbox, strconv.FormatInt(g.SessionID, 10))
	args := []any{g.TurnID, g.SessionID, g.Round, g.Owner, f.Kind, f.State, parts, WakeChannel, payload, faces}
	var turn master.Turn
	scan := func(row pgx.Row) error { return row.Scan(&turn.ID, &turn.Round, &turn.MessageID, &next) }
	if s.webhooks.Load() && f.Kind == master.OutReply {
		// The turn's blocked tasks become a webhook event with the
		// reply: a transaction of two statements.
		tx, err := s.begin(ctx)
		if err != nil {
			return false, fmt.Errorf("finish turn: %w", err)
		}
		defer rollback(ctx, tx)
		err = scan(tx.QueryRow(ctx, finishSQL, args...))
		if errors.Is(err, pgx.ErrNoRows) {
			return false, fmt.Errorf("finish turn %d round %d: %w", g.TurnID, g.Round, master.ErrStale)
		}
		if err != nil {
			return false, fmt.Errorf("finish turn: %w", err)
		}
		tx.wake(payload)
		turn.SessionID = g.SessionID
		if err := s.enqueueBlocked(ctx, tx, turn, f.Kind); err != nil {
			return false, fmt.Errorf("finish turn: %w", err)
		}
		if err := tx.Commit(ctx); err != nil {
			return false, fmt.Errorf("finish turn: %w", err)
		}
		return next, nil
	}
	err = s.queryNotifying(ctx, payload, func(q querier) error { return scan(q.QueryRow(ctx, finishSQL, args...)) })
	if errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("finish turn %d round %d: %w", g.TurnID, g.Round, master.ErrStale)
	}
	if err != nil {
		return false, fmt.Errorf("finish turn: %w", err)
	}
	return next, nil
}

// queueTurnParts writes a turn's reply (or its seq-th question) to the
// outbox, part by part; only the first part replies to the turn's
// message.
func queueTurnParts(ctx context.Context, tx pgx.Tx, turn master.Turn, kind master.OutKind, seq int, texts []string) error {
	mark(tx, WakeOutbox)
	n := len(texts)
	replyTo, nonces, parts, contents := make([]string, n), make([]string, n), make([]int32, n), make([]string, n)
	for i, p := range texts {
		parts[i] = int32(i)
		nonces[i] = outNonce(turn.ID, kind, seq, i)
		contents[i] = cleanText(p)
	}
	// A report's, a brief's or an API message's turn has no Discord
	// message to reply to.
	if turn.AuthorID != "" && !strings.HasPrefix(turn.MessageID, master.APIMessagePrefix) && n > 0 {
		replyTo[0] = turn.MessageID
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO outbox (session_id, turn_id, kind, channel_id, reply_to, content, part, nonce, seq)
		SELECT $1, $2, $3, $4, nullif(p.reply_to, ''), p.content, p.part, p.nonce, $9
		FROM unnest($5::text[], $6::text[], $7::int[], $8::text[]) AS p(content, reply_to, part, nonce)`,
		turn.SessionID, turn.ID, kind, turn.ChannelID, contents, replyTo, parts, nonces, seq); err != nil {
		return fmt.Errorf("outbox: %w", err)
	}
	return nil
}

// Delegate enqueues the next round of a guarded turn and advances the
// turn to it and wakes the workers, in one statement (one round trip,
// one commit). It returns the tasks' ids in order.
func (s *Store) Delegate(ctx context.Context, g master.Guard, tasks []master.NewTask) ([]int64, error) {
	input, err := batchJSON(tasks)
	if err != nil {
		return nil, fmt.Errorf("delegate: %w", err)
	}
	payload := payloadOf(WakeTasks, strconv.FormatInt(g.SessionID, 10))
	var ids []int64
	err = s.queryNotifying(ctx, payload, func(q querier) error {
		rows, err := q.Query(ctx, `
			WITH g AS (
				SELECT u.id, u.round, u.session_id, s.guild_id
				FROM turns u JOIN sessions s ON s.id = u.session_id
				WHERE u.id = $2 AND u.session_id = $1 AND u.state = 'running' AND u.round = $3
				  AND s.state = 'active' AND s.master_owner = $7 AND s.master_lease_until > now()
				FOR UPDATE OF u
			), `+enqueueCTEs("g", "$4", "$1", "$2", "$3 + 1", "$5")+`, advanced AS (
				UPDATE turns u SET round = u.round + 1, updated_at = now() FROM g WHERE u.id = g.id
			), woken AS (
				SELECT pg_notify($6, $8) FROM g
			)
			SELECT i.id FROM input i, g, (SELECT count(*) FROM woken) w ORDER BY i.ord`,
			g.SessionID, g.TurnID, g.Round, input, s.attempts(), WakeChannel, g.Owner, payload)
		if err != nil {
			return err
		}
		if ids, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return err
		}
		if len(ids) == 0 {
			return pgx.ErrNoRows
		}
		return nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("delegate: turn %d round %d: %w", g.TurnID, g.Round, master.ErrStale)
	}
	if err != nil {
		return nil, fmt.Errorf("delegate: %w", err)
	}
	if len(ids) != len(tasks) {
		return nil, fmt.Errorf("delegate: inserted %d tasks, want %d", len(ids), len(tasks))
	}
	return ids, nil
}

// Replan replaces a guarded turn's session roster. Queued tasks of removed
// roles are cancelled (with their dependents); finished results stay.
func (s *Store) Replan(ctx context.Context, g master.Guard, roster []master.Role) ([]string, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := checkGuard(ctx, tx, g); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	removed, err := replaceRoster(ctx, tx, g.SessionID, roster)
	if err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	if err := notify(ctx, tx, WakeTasks+WakeOutbox, g.SessionID); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	return removed, nil
}

// FailTurn counts a failed master decision on the guarded turn and puts
// its next one off by retryIn; it returns the failures counted so far.
// The guard's round is not checked: a failure may follow a change the
// decision made.
func (s *Store) FailTurn(ctx context.Context, g master.Guard, retryIn time.Duration) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		UPDATE turns u SET master_failures = u.master_failures + 1,
		       not_before = now() + $4::interval, updated_at = now()
		FROM sessions s
		WHERE u.id = $1 AND s.id = u.session_id AND u.session_id = $2 AND u.state = 'running'
		  AND s.state = 'active' AND s.master_owner = $3
		RETURNING u.master_failures`, g.TurnID, g.SessionID, g.Owner, retryIn).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("fail turn %d: %w", g.TurnID, master.ErrStale)
	}
	if err != nil {
		return 0, fmt.Errorf("fail turn: %w", err)
	}
	return n, nil
}

// AbandonTurn ends a running turn whatever its round, the last resort when
// finishing it normally failed: text is queued as its reply unless it has
// one, and the turn is done. It needs only the master lease.
func (s *Store) AbandonTurn(ctx context.Context, g master.Guard, text string) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("abandon turn: %w", err)
	}
	defer tx.Rollback(ctx)
	turn, err := scanTurn(tx.QueryRow(ctx, `
		SELECT `+turnColumns+` FROM turns u JOIN sessions s ON s.id = u.session_id
		WHERE u.id = $1 AND u.session_id = $2 AND u.state = 'running'
		  AND s.state = 'active' AND s.master_owner = $3
		FOR UPDATE OF u`, g.TurnID, g.SessionID, g.Owner))
	if errors.Is(err, master.ErrNotFound) {
		return fmt.Errorf("abandon turn %d: %w", g.TurnID, master.ErrStale)
	}
	if err != nil {
		return fmt.Errorf("abandon turn: %w", err)
	}
	var replied bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox WHERE turn_id = $1 AND kind = 'reply')`, turn.ID).Scan(&replied); err != nil {
		return fmt.Errorf("abandon turn: %w", err)
	}
	if !replied {
		if err := queueTurnParts(ctx, tx, turn, master.OutReply, 0, []string{text}); err != nil {
			return fmt.Errorf("abandon turn: %w", err)
		}
	}
	if _, err := cancelTurnTasks(ctx, tx, turn.ID, "the turn was ended"); err != nil {
		return fmt.Errorf("abandon turn: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE turns SET state = 'done', updated_at = now() WHERE id = $1`, turn.ID); err != nil {
		return fmt.Errorf("abandon turn: %w", err)
	}
	if err := notify(ctx, tx, WakeOutbox+WakeTasks, g.SessionID); err != nil {
		return fmt.Errorf("abandon turn: %w", err)
	}
	return tx.Commit(ctx)
}
