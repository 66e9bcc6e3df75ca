package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/dashboard"
	"github.com/callonbot/callon/master"
)

// Team implements dashboard.Store: one read-only, repeatable-read
// transaction (the timeline is one snapshot), each statement bounded by
// the team's latest turns.
func (s *Store) Team(ctx context.Context, sessionID int64, turns int) (dashboard.Team, error) {
	var v dashboard.Team
	turns = min(max(turns, 1), 50)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		var err error
		if v.Session, err = session(ctx, tx, sessionID); err != nil {
			return err
		}
		if v.Roster, err = roster(ctx, tx, sessionID); err != nil {
			return err
		}
		if v.Dispatched, err = dispatched(ctx, tx, sessionID); err != nil {
			return err
		}
		if v.Session.Features.Memory {
			rows, err := tx.Query(ctx, `SELECT `+noteColumns+` FROM channel_notes n WHERE n.guild_id = $1 AND n.channel_id = $2
				ORDER BY n.updated_at DESC, n.id DESC LIMIT $3`, v.Session.GuildID, v.Session.ChannelID, master.MaxNotes)
			if err != nil {
				return fmt.Errorf("notes: %w", err)
			}
			if v.Notes, err = pgx.CollectRows(rows, scanNote); err != nil {
				return fmt.Errorf("notes: %w", err)
			}
		}
		if by := v.Session.DispatchedBy; by != 0 {
			if v.DispatchedBy, err = session(ctx, tx, by); err != nil && !errors.Is(err, master.ErrNotFound) {
				return err
			}
		}
		rows, err := tx.Query(ctx, `SELECT `+turnColumns+`,
			       (SELECT min(o.created_at) FROM outbox o WHERE o.turn_id = u.id AND o.kind IN ('reply', 'question')),
			       (SELECT min(o.sent_at) FROM outbox o WHERE o.turn_id = u.id AND o.kind IN ('reply', 'question') AND o.part = 0)
			FROM turns u WHERE u.session_id = $1 AND u.state <> 'refused'
			ORDER BY u.sort_key DESC, u.id DESC LIMIT $2`, sessionID, turns)
		if err != nil {
			return fmt.Errorf("turns: %w", err)
		}
		v.Turns, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (dashboard.TurnLine, error) {
			var l dashboard.TurnLine
			var queued, replied *time.Time
			var err error
			l.Turn, err = scanTurn(r, &queued, &replied)
			l.QueuedAt, l.RepliedAt = orZero(queued), orZero(replied)
			return l, err
		})
		if err != nil {
			return fmt.Errorf("turns: %w", err)
		}
		if len(v.Turns) == 0 {
			return reports(ctx, tx, &v)
		}
		ids := make([]int64, len(v.Turns))
		index := make(map[int64]int, len(v.Turns))
		for i, l := range v.Turns {
			ids[i], index[l.Turn.ID] = l.Turn.ID, i
		}
		rows, err = tx.Query(ctx, `SELECT `+taskColumns+` FROM tasks t WHERE t.turn_id = ANY ($1) ORDER BY t.round, t.id`, ids)
		if err != nil {
			return fmt.Errorf("tasks: %w", err)
		}
		tasks, err := collectTasks(rows)
		if err != nil {
			return fmt.Errorf("tasks: %w", err)
		}
		taskTurn := map[int64]int{}
		for _, t := range tasks {
			i := index[t.TurnID]
			v.Turns[i].Tasks = append(v.Turns[i].Tasks, t)
			taskTurn[t.ID] = i
		}
		if len(tasks) == 0 {
			return reports(ctx, tx, &v)
		}
		taskIDs := make([]int64, len(tasks))
		for i, t := range tasks {
			taskIDs[i] = t.ID
		}
		rows, err = tx.Query(ctx, `SELECT task_id, seq, name, state, coalesce(is_error, false), coalesce(duration_ms, 0),
			       coalesce(size, 0), started_at, ended_at
			FROM tool_calls WHERE task_id = ANY ($1) ORDER BY task_id, seq LIMIT 2000`, taskIDs)
		if err != nil {
			return fmt.Errorf("tool calls: %w", err)
		}
		var c dashboard.ToolCall
		var ms int
		var started, ended *time.Time
		if _, err := pgx.ForEachRow(rows, []any{&c.TaskID, &c.Seq, &c.Name, &c.State, &c.IsError, &ms, &c.Size, &started, &ended}, func() error {
			c.Duration, c.StartedAt, c.EndedAt = time.Duration(ms)*time.Millisecond, orZero(started), orZero(ended)
			i := taskTurn[c.TaskID]
			v.Turns[i].Calls = append(v.Turns[i].Calls, c)
			return nil
		}); err != nil {
			return fmt.Errorf("tool calls: %w", err)
		}
		rows, err = tx.Query(ctx, `SELECT task_id, seq, tool, state, created_at, decided_at
			FROM approvals WHERE task_id = ANY ($1) ORDER BY id LIMIT 500`, taskIDs)
		if err != nil {
			return fmt.Errorf("approvals: %w", err)
		}
		var a dashboard.Approval
		var decided *time.Time
		if _, err := pgx.ForEachRow(rows, []any{&a.TaskID, &a.Seq, &a.Tool, &a.State, &a.CreatedAt, &decided}, func() error {
			a.DecidedAt = orZero(decided)
			i := taskTurn[a.TaskID]
			v.Turns[i].Approvals = append(v.Turns[i].Approvals, a)
			return nil
		}); err != nil {
			return fmt.Errorf("approvals: %w", err)
		}
		return reports(ctx, tx, &v)
	})
	if err != nil {
		if errors.Is(err, master.ErrNotFound) {
			return v, err
		}
		return v, fmt.Errorf("dashboard team %d: %w", sessionID, err)
	}
	return v, nil
}

// reports reads the reports a team sent and received (the latest 50).
func reports(ctx context.Context, tx pgx.Tx, v *dashboard.Team) error {
	rows, err := tx.Query(ctx, `SELECT id, from_session, coalesce(to_session, 0), to_channel, summary, delivery, final, created_at
		FROM reports WHERE from_session = $1 OR to_session = $1 ORDER BY id DESC LIMIT 50`, v.Session.ID)
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	v.Reports, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (dashboard.Report, error) {
		var rep dashboard.Report
		err := r.Scan(&rep.ID, &rep.FromID, &rep.ToID, &rep.ToChannel, &rep.Summary, &rep.Delivery, &rep.Final, &rep.CreatedAt)
		return rep, err
	})
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

// maxSearch bounds one page of SearchSignals.
const maxSearch = 500

// SearchSignals implements dashboard.Store: newest first by id, paged by
// BeforeID; the guilds, team, kinds, role and time range narrow it.
func (s *Store) SearchSignals(ctx context.Context, q dashboard.SignalQuery) ([]dashboard.SignalRow, error) {
	limit := q.Limit
	if limit <= 0 || limit > maxSearch {
		limit = maxSearch
	}
	args := []any{limit}
	var where strings.Builder
	where.WriteString("true")
	add := func(cond string, v any) {
		args = append(args, v)
		where.WriteString(" AND " + strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args))))
	}
	if q.Guilds != nil {
		add("s.guild_id = ANY ($?)", q.Guilds)
	}
	if q.SessionID != 0 {
		add("g.session_id = $?", q.SessionID)
	}
	if len(q.Kinds) > 0 {
		kinds := make([]string, len(q.Kinds))
		for i, k := range q.Kinds {
			kinds[i] = string(k)
		}
		add("g.kind = ANY ($?)", kinds)
	}
	if q.Role != "" {
		add("t.role = $?", q.Role)
	}
	if !q.Since.IsZero() {
		add("g.created_at >= $?", q.Since)
	}
	if !q.Until.IsZero() {
		add("g.created_at < $?", q.Until)
	}
	if q.BeforeID > 0 {
		add("g.id < $?", q.BeforeID)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT g.id, g.session_id, s.guild_id, s.thread_id, coalesce(g.task_id, 0), coalesce(t.role, ''), g.kind, g.payload, g.created_at
		FROM signals g JOIN sessions s ON s.id = g.session_id LEFT JOIN tasks t ON t.id = g.task_id
		WHERE `+where.String()+`
		ORDER BY g.id DESC LIMIT $1`, args...)
	if err != nil {
		return nil, fmt.Errorf("search signals: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dashboard.SignalRow, error) {
		var sr dashboard.SignalRow
		var payload []byte
		err := r.Scan(&sr.ID, &sr.SessionID, &sr.GuildID, &sr.ThreadID, &sr.TaskID, &sr.Role, &sr.Kind, &payload, &sr.At)
		sr.Payload = payload
		return sr, err
	})
	if err != nil {
		return nil, fmt.Errorf("search signals: %w", err)
	}
	return out, nil
}

// maxChanges bounds the signals one Changes reads: past it, Overflow
// says so (every view is read again) and the next read goes on from
// there.
const maxChanges = 2000

// changesLookback is how far below its cursor Changes reads again. A
// signal's id is drawn when its transaction writes it, not when it
// commits, so a signal can become visible after a later id was read:
// without the lookback it would be skipped for good. The hub reports
// each id once.
const changesLookback = 256

// Changes implements dashboard.Store: two statements in one round trip,
// on indexes (the signals' primary key from below the cursor on, the
// pending outbox rows). A negative cursor starts at the newest signals
// (read, for the hub to know them, not reported).
func (s *Store) Changes(ctx context.Context, after int64) (dashboard.Changes, error) {
	c := dashboard.Changes{Cursor: max(after, 0)}
	b := &pgx.Batch{}
	if after < 0 {
		b.Queue(`SELECT id, session_id FROM signals
			WHERE id > (SELECT coalesce(max(id), 0) FROM signals) - $1 ORDER BY id LIMIT $2`, changesLookback, maxChanges)
	} else {
		b.Queue(`SELECT id, session_id FROM signals WHERE id > $1 ORDER BY id LIMIT $2`, after-changesLookback, maxChanges)
	}
	b.Queue(`SELECT DISTINCT session_id FROM outbox WHERE state = 'pending' AND session_id IS NOT NULL`)
	err := func() error {
		br := s.pool.SendBatch(ctx, b)
		defer br.Close()
		rows, err := br.Query()
		if err != nil {
			return err
		}
		var ref dashboard.SignalRef
		if _, err := pgx.ForEachRow(rows, []any{&ref.ID, &ref.SessionID}, func() error {
			c.Cursor = max(c.Cursor, ref.ID)
			c.Signals = append(c.Signals, ref)
			return nil
		}); err != nil {
			return err
		}
		c.Overflow = len(c.Signals) == maxChanges
		if rows, err = br.Query(); err != nil {
			return err
		}
		if c.Waiting, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return err
		}
		return br.Close()
	}()
	if err != nil {
		return dashboard.Changes{}, fmt.Errorf("changes: %w", err)
	}
	return c, nil
}

// SessionGuilds implements dashboard.Store.
func (s *Store) SessionGuilds(ctx context.Context, ids []int64) (map[int64]string, error) {
	out := make(map[int64]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id, guild_id FROM sessions WHERE id = ANY ($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("session guilds: %w", err)
	}
	var id int64
	var g string
	if _, err := pgx.ForEachRow(rows, []any{&id, &g}, func() error { out[id] = g; return nil }); err != nil {
		return nil, fmt.Errorf("session guilds: %w", err)
	}
	return out, nil
}

// Guilds implements dashboard.Store: the guilds of the sessions kept (in
// guild order, at most limit).
func (s *Store) Guilds(ctx context.Context, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT guild_id FROM sessions ORDER BY guild_id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("guilds: %w", err)
	}
	guilds, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("guilds: %w", err)
	}
	return guilds, nil
}
