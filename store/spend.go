package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
//
// Holds without a turn that are asked for at the same time (the workers'
// calls) are granted together, in one round trip and one commit: each is
// still decided by holdSQL in turn, seeing the holds before it, so they
// overshoot a budget by at most one hold as when made one by one.
func (s *Store) HoldSpend(ctx context.Context, h master.Hold) (master.Held, error) {
	if h.Turn != nil {
		return s.holdOne(ctx, h)
	}
	r := s.holds.Do(ctx, h)
	return r.held, r.err
}

// holdResult is one hold's answer.
type holdResult struct {
	held master.Held
	err  error
}

// holdArgs are holdSQL's arguments for h.
func holdArgs(h master.Hold) []any {
	var turnID int64
	var owner string
	if h.Turn != nil {
		turnID, owner = h.Turn.TurnID, h.Turn.Owner
	}
	ttl := h.TTL
	if ttl <= 0 {
		ttl = master.HoldTTL
	}
	return []any{h.SessionID, h.Budget.SessionTokens, h.Budget.GuildDailyTokens, h.Tokens(),
		h.TaskID, h.Model, h.PromptTokens, h.CompletionTokens, turnID, owner, h.MaxCalls, h.Owner, ttl.Microseconds()}
}

// holdRow is what holdSQL answers.
type holdRow struct {
	used, held, budget, guildBudget int64
	guarded                         bool
	calls                           int
	id                              *int64
	guildID                         string
}

func (r *holdRow) dest() []any {
	return []any{&r.used, &r.held, &r.budget, &r.guarded, &r.calls, &r.id, &r.guildBudget, &r.guildID}
}

// holdOne grants or refuses h on its own.
func (s *Store) holdOne(ctx context.Context, h master.Hold) (master.Held, error) {
	var r holdRow
	err := s.pool.QueryRow(ctx, holdSQL, holdArgs(h)...).Scan(r.dest()...)
	return s.holdAnswer(ctx, h, r, err)
}

// holdAnswer turns holdSQL's row (or its error) for h into a hold or the
// reason there is none.
func (s *Store) holdAnswer(ctx context.Context, h master.Hold, r holdRow, err error) (master.Held, error) {
	var turnID int64
	if h.Turn != nil {
		turnID = h.Turn.TurnID
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows) && turnID > 0:
		return master.Held{}, fmt.Errorf("hold spend: turn %d: %w", turnID, master.ErrStale)
	case errors.Is(err, pgx.ErrNoRows):
		return master.Held{}, fmt.Errorf("hold spend: session %d: %w", h.SessionID, master.ErrNotFound)
	case err != nil:
		return master.Held{}, fmt.Errorf("hold spend: %w", err)
	case !r.guarded:
		return master.Held{}, fmt.Errorf("hold spend: turn %d: %w", turnID, master.ErrStale)
	case r.id != nil:
		return master.Held{ID: *r.id, Calls: r.calls}, nil
	case r.budget > 0 && r.used+r.held >= r.budget:
		return master.Held{}, &master.BudgetError{Limit: r.budget, Used: r.used, Held: r.held}
	case turnID > 0 && r.calls >= h.MaxCalls:
		return master.Held{Calls: r.calls}, fmt.Errorf("turn %d made %d master calls: %w", turnID, r.calls, master.ErrCeiling)
	default:
		// The statement's snapshot may predate the holds that refused it:
		// what the guild's day holds now tells whether to wait.
		e := &master.BudgetError{Guild: true, Limit: r.guildBudget}
		if err := s.pool.QueryRow(ctx, `SELECT used_tokens, held_tokens FROM guild_spend WHERE guild_id = $1 AND day = `+utcToday,
			r.guildID).Scan(&e.Used, &e.Held); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return master.Held{}, fmt.Errorf("hold spend: %w", err)
		}
		return master.Held{}, e
	}
}

// holdTogether grants or refuses holds without a turn asked for at the
// same time: holdSQL for each, in one implicit transaction sent at once
// (one round trip, one commit). The sessions' rows are locked first, in
// id order, then their guilds' rows of the day, in guild order, and the
// holds are decided in session order: every statement that takes these
// locks (holdSQL, settleSQL) takes sessions before guilds, so they never
// wait on each other in a circle. If the transaction fails as a whole
// (a deadlock with another process, say), each hold is asked for alone.
func (s *Store) holdTogether(ctx context.Context, hs []master.Hold) []holdResult {
	out := make([]holdResult, len(hs))
	// The leader's context may end with its own call: the others' holds
	// still need their answer, so the write has a bound of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), holdWriteTimeout)
	defer cancel()
	if len(hs) == 1 {
		out[0].held, out[0].err = s.holdOne(ctx, hs[0])
		return out
	}
	order := make([]int, len(hs))
	sessions := make([]int64, 0, len(hs))
	for i, h := range hs {
		order[i] = i
		sessions = append(sessions, h.SessionID)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(hs[a].SessionID, hs[b].SessionID) })
	slices.Sort(sessions)
	sessions = slices.Compact(sessions)

	b := &pgx.Batch{}
	b.Queue(`SELECT id FROM sessions WHERE id = ANY ($1) ORDER BY id FOR UPDATE`, sessions)
	b.Queue(`SELECT guild_id FROM guild_spend WHERE day = `+utcToday+`
		AND guild_id IN (SELECT guild_id FROM sessions WHERE id = ANY ($1)) ORDER BY guild_id FOR UPDATE`, sessions)
	for _, i := range order {
		b.Queue(holdSQL, holdArgs(hs[i])...)
	}
	rows := make([]holdRow, len(hs))
	errs := make([]error, len(hs))
	br := s.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	for _, i := range order {
		if err != nil {
			break
		}
		errs[i] = br.QueryRow().Scan(rows[i].dest()...)
		if errs[i] != nil && !errors.Is(errs[i], pgx.ErrNoRows) {
			err = errs[i]
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	var pgErr *pgconn.PgError
	switch {
	case err != nil && errors.As(err, &pgErr):
		// Nothing was written: each on its own.
		for i, h := range hs {
			out[i].held, out[i].err = s.holdOne(ctx, h)
		}
	case err != nil:
		for i := range out {
			out[i].err = fmt.Errorf("hold spend: %w", err)
		}
	default:
		for i, h := range hs {
			out[i].held, out[i].err = s.holdAnswer(ctx, h, rows[i], errs[i])
		}
	}
	return out
}

// holdWriteTimeout bounds one write of holds or settlements.
const holdWriteTimeout = 10 * time.Second

// settleSQL settles the holds its first CTE, h, deletes (settleGiven or
// settleLostHolds): each hold is removed from its session's and its guild
// day's held tokens, and what it is charged (h's p and c) is added to the
// session's totals and usage by model, its task's tokens and its guild's
// day (in all and by model). Holds of one session, task or guild day are
// summed first: a statement may change a row only once. Sessions' rows
// are locked first, in id order, then guilds' rows of the day, in guild
// order, as holdTogether does: settlements and holds of several sessions
// never wait on each other in a circle.
const settleSQL = `
	WITH h AS (%s
	), lk AS (
		SELECT id FROM sessions WHERE id = ANY (ARRAY(SELECT session_id FROM h)) ORDER BY id FOR UPDATE
	), bs AS (
		SELECT session_id, sum(held) AS held, sum(p) AS p, sum(c) AS c FROM h GROUP BY session_id
	), s AS (
		UPDATE sessions SET held_tokens = held_tokens - bs.held,
		       prompt_tokens = prompt_tokens + bs.p, completion_tokens = completion_tokens + bs.c
		FROM bs WHERE sessions.id = ANY (ARRAY(SELECT id FROM lk)) AND sessions.id = bs.session_id
		RETURNING sessions.id
	), bg AS (
		-- after every session's row: the lock order of holdSQL
		SELECT guild_id, day, sum(held) AS held, sum(p + c) AS used FROM h
		WHERE (SELECT count(*) FROM s) > 0 GROUP BY guild_id, day
	), lg AS (
		SELECT g.guild_id FROM guild_spend g JOIN bg ON g.guild_id = bg.guild_id AND g.day = bg.day
		ORDER BY g.guild_id, g.day FOR UPDATE OF g
	), g AS (
		UPDATE guild_spend g SET held_tokens = g.held_tokens - bg.held, used_tokens = g.used_tokens + bg.used
		FROM bg WHERE g.guild_id = bg.guild_id AND g.day = bg.day AND (SELECT count(*) FROM lg) >= 0
	), m AS (
		INSERT INTO session_usage AS m (session_id, model, prompt_tokens, completion_tokens)
		SELECT session_id, model, sum(p), sum(c) FROM h WHERE p + c > 0
		GROUP BY session_id, model
		ON CONFLICT (session_id, model) DO UPDATE
		SET prompt_tokens = m.prompt_tokens + excluded.prompt_tokens,
		    completion_tokens = m.completion_tokens + excluded.completion_tokens
	), gu AS (
		INSERT INTO guild_usage AS gu (guild_id, day, model, prompt_tokens, completion_tokens)
		SELECT guild_id, day, model, sum(p), sum(c) FROM h WHERE p + c > 0
		GROUP BY guild_id, day, model
		ON CONFLICT (guild_id, day, model) DO UPDATE
		SET prompt_tokens = gu.prompt_tokens + excluded.prompt_tokens,
		    completion_tokens = gu.completion_tokens + excluded.completion_tokens
	), t AS (
		-- after the sessions' rows too: /dissolve locks a session, then its tasks
		UPDATE tasks SET prompt_tokens = tasks.prompt_tokens + bt.p, completion_tokens = tasks.completion_tokens + bt.c
		FROM (SELECT task_id, sum(p) AS p, sum(c) AS c FROM h WHERE task_id IS NOT NULL GROUP BY task_id) bt
		WHERE tasks.id = ANY (ARRAY(SELECT task_id FROM h)) AND tasks.id = bt.task_id AND (SELECT count(*) FROM s) > 0
	)
	SELECT coalesce(array_agg(id), '{}') FROM h`

// settleGiven deletes the holds of the jsonb list $1 ({id, p, c, model};
// $2 their ids), each charged what its call used ($1's model when its call
// named one). Rows are found by key (id = ANY), whatever the planner
// estimates of the list.
const settleGiven = `
		DELETE FROM spend_holds d
		USING jsonb_to_recordset($1::jsonb) AS i(id bigint, p bigint, c bigint, model text)
		WHERE d.id = ANY ($2) AND d.id = i.id
		RETURNING d.id, d.session_id, d.guild_id, d.day, d.task_id, coalesce(nullif(i.model, ''), d.model) AS model,
		          d.prompt_tokens + d.completion_tokens AS held, i.p, i.c`

// settleLostHolds deletes the holds of the processes $1 names and those
// that expired, each charged its worst case.
const settleLostHolds = `
		DELETE FROM spend_holds WHERE owner = ANY ($1) OR expires_at < now()
		RETURNING id, session_id, guild_id, day, task_id, model,
		          prompt_tokens + completion_tokens AS held, prompt_tokens AS p, completion_tokens AS c`

// settlement is one hold to settle with what its call used.
type settlement struct {
	ID    int64  `json:"id"`
	P     int64  `json:"p"`
	C     int64  `json:"c"`
	Model string `json:"model"`
}

// SettleSpend replaces hold id with what its call used, in one statement
// (see master.SpendStore); master.ErrNotFound when the hold is gone.
// Settlements made at the same time are written together, in one
// statement.
func (s *Store) SettleSpend(ctx context.Context, id int64, u master.Usage) error {
	return s.settles.Do(ctx, settlement{ID: id, P: u.PromptTokens, C: u.CompletionTokens, Model: u.Model})
}

// settleTogether settles holds in one statement and answers for each.
func (s *Store) settleTogether(ctx context.Context, ss []settlement) []error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), holdWriteTimeout)
	defer cancel()
	errs := make([]error, len(ss))
	input, err := marshalJSON(ss)
	ids := make([]int64, len(ss))
	for i, st := range ss {
		ids[i] = st.ID
	}
	var settled []int64
	if err == nil {
		err = s.pool.QueryRow(ctx, fmt.Sprintf(settleSQL, settleGiven), input, ids).Scan(&settled)
	}
	for i, st := range ss {
		switch {
		case err != nil:
			errs[i] = fmt.Errorf("settle spend: %w", err)
		case !slices.Contains(settled, st.ID):
			errs[i] = fmt.Errorf("settle spend: hold %d: %w", st.ID, master.ErrNotFound)
		}
	}
	return errs
}

// settleLost settles at their worst case the holds of the processes dead
// names and those that expired: their calls may have been made and paid
// for. It returns how many it settled.
func settleLost(ctx context.Context, tx pgx.Tx, dead []string) (int, error) {
	var settled []int64
	if err := tx.QueryRow(ctx, fmt.Sprintf(settleSQL, settleLostHolds), dead).Scan(&settled); err != nil {
		return 0, fmt.Errorf("settle lost holds: %w", err)
	}
	return len(settled), nil
}

// holdSweepEvery is how often SweepExpired looks for expired holds when
// no process died (a process that dies has its holds settled at once).
const holdSweepEvery = time.Minute
