package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// holdSQL grants a hold in one statement, or says why not. The session's
// row is locked first (FOR UPDATE returns its latest version once any
// other hold or settlement of it has committed), then the guild's row of
// the day (the upsert's WHERE sees its latest version); a settlement
// takes them in the same order. A hold is granted while the session's
// used + held tokens are under its budget and the same holds for the
// guild's day; then both rows' held_tokens grow by the hold, which gets
// its row, and with $9 (a turn) the turn's master calls are counted, the
// turn's guard and ceiling being part of the condition.
const holdSQL = `
	WITH t AS (
		SELECT u.master_calls FROM turns u JOIN sessions s ON s.id = u.session_id
		WHERE $9 > 0 AND u.id = $9 AND u.session_id = $1 AND u.state = 'running'
		  AND s.state = 'active' AND s.master_owner = $10
	), s AS (
		SELECT id, guild_id, coalesce(token_budget, $2) AS budget,
		       prompt_tokens + completion_tokens AS used, held_tokens AS held
		FROM sessions WHERE id = $1
		FOR UPDATE
	), ok AS (
		SELECT s.*, (s.budget <= 0 OR s.used + s.held < s.budget)
		            AND ($9 = 0 OR EXISTS (SELECT 1 FROM t WHERE t.master_calls < $11)) AS fits
		FROM s
	), gb AS (
		SELECT coalesce((SELECT l.daily_tokens FROM guild_limits l, s WHERE l.guild_id = s.guild_id), $3) AS budget
	), g AS (
		INSERT INTO guild_spend AS g (guild_id, day, held_tokens)
		SELECT ok.guild_id, ` + utcToday + `, $4 FROM ok WHERE ok.fits
		ON CONFLICT (guild_id, day) DO UPDATE SET held_tokens = g.held_tokens + excluded.held_tokens
		WHERE (SELECT budget FROM gb) <= 0 OR g.used_tokens + g.held_tokens < (SELECT budget FROM gb)
		RETURNING g.guild_id, g.day
	), h AS (
		INSERT INTO spend_holds (session_id, guild_id, day, task_id, model, prompt_tokens, completion_tokens, owner, expires_at)
		SELECT $1, g.guild_id, g.day, nullif($5, 0), $6, $7, $8, $12, now() + $13 * interval '1 microsecond' FROM g
		RETURNING id
	), sh AS (
		UPDATE sessions SET held_tokens = held_tokens + $4 FROM g WHERE sessions.id = $1
	), counted AS (
		UPDATE turns u SET master_calls = u.master_calls + 1 FROM g WHERE $9 > 0 AND u.id = $9
		RETURNING u.master_calls
	)
	SELECT s.used, s.held, s.budget, ($9 = 0 OR EXISTS (SELECT 1 FROM t)),
	       coalesce((SELECT master_calls FROM counted), (SELECT master_calls FROM t), 0),
	       (SELECT id FROM h), (SELECT budget FROM gb), s.guild_id
	FROM s`

// HoldSpend holds a model call's worst case against its session's budget
// and its guild's of the UTC day, in one statement (see master.Hold). With
// h.Turn set it counts the call on the turn too: master.ErrStale when the
// guard fails, master.ErrCeiling past h.MaxCalls.
func (s *Store) HoldSpend(ctx context.Context, h master.Hold) (master.Held, error) {
	var turnID int64
	var owner string
	if h.Turn != nil {
		turnID, owner = h.Turn.TurnID, h.Turn.Owner
	}
	ttl := h.TTL
	if ttl <= 0 {
		ttl = master.HoldTTL
	}
	var used, held, budget, guildBudget int64
	var guarded bool
	var calls int
	var id *int64
	var guildID string
	err := s.pool.QueryRow(ctx, holdSQL, h.SessionID, h.Budget.SessionTokens, h.Budget.GuildDailyTokens, h.Tokens(),
		h.TaskID, h.Model, h.PromptTokens, h.CompletionTokens, turnID, owner, h.MaxCalls, h.Owner, ttl.Microseconds()).
		Scan(&used, &held, &budget, &guarded, &calls, &id, &guildBudget, &guildID)
	switch {
	case errors.Is(err, pgx.ErrNoRows) && turnID > 0:
		return master.Held{}, fmt.Errorf("hold spend: turn %d: %w", turnID, master.ErrStale)
	case errors.Is(err, pgx.ErrNoRows):
		return master.Held{}, fmt.Errorf("hold spend: session %d: %w", h.SessionID, master.ErrNotFound)
	case err != nil:
		return master.Held{}, fmt.Errorf("hold spend: %w", err)
	case !guarded:
		return master.Held{}, fmt.Errorf("hold spend: turn %d: %w", turnID, master.ErrStale)
	case id != nil:
		return master.Held{ID: *id, Calls: calls}, nil
	case budget > 0 && used+held >= budget:
		return master.Held{}, &master.BudgetError{Limit: budget, Used: used, Held: held}
	case turnID > 0 && calls >= h.MaxCalls:
		return master.Held{Calls: calls}, fmt.Errorf("turn %d made %d master calls: %w", turnID, calls, master.ErrCeiling)
	default:
		// The statement's snapshot may predate the holds that refused it:
		// what the guild's day holds now tells whether to wait.
		e := &master.BudgetError{Guild: true, Limit: guildBudget}
		if err := s.pool.QueryRow(ctx, `SELECT used_tokens, held_tokens FROM guild_spend WHERE guild_id = $1 AND day = `+utcToday,
			guildID).Scan(&e.Used, &e.Held); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return master.Held{}, fmt.Errorf("hold spend: %w", err)
		}
		return master.Held{}, e
	}
}

// settleSQL settles the holds that $1 selects (a predicate on the
// spend_holds row h): each hold is removed from its session's and its
// guild day's held tokens, and what it is charged — $2 and $3 when $4,
// else its own worst case — is added to the session's totals and usage by
// model, its task's tokens and its guild's day (in all and by model).
// Holds of one session, task or guild day are summed first: a statement
// may change a row only once.
const settleSQL = `
	WITH h AS (
		DELETE FROM spend_holds WHERE %s
		RETURNING session_id, guild_id, day, task_id, model, prompt_tokens + completion_tokens AS held,
		          CASE WHEN $4 THEN $2 ELSE prompt_tokens END AS p,
		          CASE WHEN $4 THEN $3 ELSE completion_tokens END AS c
	), bs AS (
		SELECT session_id, sum(held) AS held, sum(p) AS p, sum(c) AS c FROM h GROUP BY session_id
	), s AS (
		UPDATE sessions SET held_tokens = held_tokens - bs.held,
		       prompt_tokens = prompt_tokens + bs.p, completion_tokens = completion_tokens + bs.c
		FROM bs WHERE sessions.id = bs.session_id
		RETURNING sessions.id
	), bg AS (
		-- after every session's row: the lock order of holdSQL
		SELECT guild_id, day, sum(held) AS held, sum(p + c) AS used FROM h
		WHERE (SELECT count(*) FROM s) > 0 GROUP BY guild_id, day
	), g AS (
		UPDATE guild_spend g SET held_tokens = g.held_tokens - bg.held, used_tokens = g.used_tokens + bg.used
		FROM bg WHERE g.guild_id = bg.guild_id AND g.day = bg.day
	), m AS (
		INSERT INTO session_usage AS m (session_id, model, prompt_tokens, completion_tokens)
		SELECT session_id, coalesce(nullif($5, ''), model), sum(p), sum(c) FROM h WHERE p + c > 0
		GROUP BY session_id, coalesce(nullif($5, ''), model)
		ON CONFLICT (session_id, model) DO UPDATE
		SET prompt_tokens = m.prompt_tokens + excluded.prompt_tokens,
		    completion_tokens = m.completion_tokens + excluded.completion_tokens
	), gu AS (
		INSERT INTO guild_usage AS gu (guild_id, day, model, prompt_tokens, completion_tokens)
		SELECT guild_id, day, coalesce(nullif($5, ''), model), sum(p), sum(c) FROM h WHERE p + c > 0
		GROUP BY guild_id, day, coalesce(nullif($5, ''), model)
		ON CONFLICT (guild_id, day, model) DO UPDATE
		SET prompt_tokens = gu.prompt_tokens + excluded.prompt_tokens,
		    completion_tokens = gu.completion_tokens + excluded.completion_tokens
	), t AS (
		-- after the sessions' rows too: /dissolve locks a session, then its tasks
		UPDATE tasks SET prompt_tokens = tasks.prompt_tokens + bt.p, completion_tokens = tasks.completion_tokens + bt.c
		FROM (SELECT task_id, sum(p) AS p, sum(c) AS c FROM h WHERE task_id IS NOT NULL GROUP BY task_id) bt
		WHERE tasks.id = bt.task_id AND (SELECT count(*) FROM s) > 0
	)
	SELECT count(*) FROM h`

// SettleSpend replaces hold id with what its call used, in one statement
// (see master.SpendStore); master.ErrNotFound when the hold is gone.
func (s *Store) SettleSpend(ctx context.Context, id int64, u master.Usage) error {
	var n int
	if err := s.pool.QueryRow(ctx, fmt.Sprintf(settleSQL, "id = $1"), id, u.PromptTokens, u.CompletionTokens, true, u.Model).Scan(&n); err != nil {
		return fmt.Errorf("settle spend: %w", err)
	}
	if n == 0 {
		return fmt.Errorf("settle spend: hold %d: %w", id, master.ErrNotFound)
	}
	return nil
}

// settleLost settles at their worst case the holds of the processes dead
// names and those that expired: their calls may have been made and paid
// for. It returns how many it settled.
func settleLost(ctx context.Context, tx pgx.Tx, dead []string) (int, error) {
	var n int
	sql := fmt.Sprintf(settleSQL, "owner = ANY ($1) OR expires_at < now()")
	if err := tx.QueryRow(ctx, sql, dead, 0, 0, false, "").Scan(&n); err != nil {
		return 0, fmt.Errorf("settle lost holds: %w", err)
	}
	return n, nil
}

// holdSweepEvery is how often SweepExpired looks for expired holds when
// no process died (a process that dies has its holds settled at once).
const holdSweepEvery = time.Minute
