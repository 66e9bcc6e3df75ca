package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/dashboard"
	"github.com/callonbot/callon/master"
)

// guildCond is the condition keeping col to guilds (nil: every guild),
// its parameter appended to args.
func guildCond(col string, guilds []string, args *[]any) string {
	if guilds == nil {
		return ""
	}
	*args = append(*args, guilds)
	return " AND " + col + " = ANY ($" + strconv.Itoa(len(*args)) + ")"
}

// Overview implements dashboard.Store: one read-only transaction of a
// few statements, each on a partial or time index (open sessions, the
// day's turns and ended tasks, pending approvals and outbox rows), so it
// costs the same however long the history is.
func (s *Store) Overview(ctx context.Context, guilds []string, day time.Time) ([]dashboard.GuildDay, error) {
	day = day.UTC().Truncate(24 * time.Hour)
	byGuild := map[string]*dashboard.GuildDay{}
	var order []string
	get := func(g string) *dashboard.GuildDay {
		d, ok := byGuild[g]
		if !ok {
			d = &dashboard.GuildDay{GuildID: g}
			byGuild[g] = d
			order = append(order, g)
		}
		return d
	}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		args := []any{}
		rows, err := tx.Query(ctx, `
			SELECT s.guild_id, s.id, s.channel_id, s.thread_id, s.owner_id, s.goal, s.state, s.created_at,
			       greatest(s.created_at,
			                (SELECT g.created_at FROM signals g WHERE g.session_id = s.id ORDER BY g.id DESC LIMIT 1),
			                (SELECT max(u.updated_at) FROM turns u WHERE u.session_id = s.id AND u.state IN ('queued', 'running', 'waiting'))),
			       coalesce((SELECT u.state FROM turns u WHERE u.session_id = s.id AND u.state IN ('queued', 'running', 'waiting')
			                 ORDER BY u.sort_key LIMIT 1), ''),
			       s.prompt_tokens + s.completion_tokens
			FROM sessions s
			WHERE s.ended_at IS NULL`+guildCond("s.guild_id", guilds, &args)+`
			ORDER BY s.guild_id, s.id DESC
			LIMIT 2000`, args...)
		if err != nil {
			return fmt.Errorf("teams: %w", err)
		}
		var g string
		var t dashboard.TeamRow
		if _, err := pgx.ForEachRow(rows, []any{&g, &t.ID, &t.ChannelID, &t.ThreadID, &t.OwnerID, &t.Goal, &t.State, &t.CreatedAt,
			&t.LastActivity, &t.Turn, &t.Tokens}, func() error {
			if d := get(g); len(d.Teams) < 200 {
				d.Teams = append(d.Teams, t)
			}
			return nil
		}); err != nil {
			return fmt.Errorf("teams: %w", err)
		}

		args = []any{day}
		rows, err = tx.Query(ctx, `
			SELECT guild_id, count(*)::int, count(*) FILTER (WHERE state = 'done')::int, coalesce(sum(master_calls), 0)::int
			FROM turns WHERE created_at >= $1 AND state <> 'refused'`+guildCond("guild_id", guilds, &args)+`
			GROUP BY 1`, args...)
		if err != nil {
			return fmt.Errorf("turns: %w", err)
		}
		var n, done, calls int
		if _, err := pgx.ForEachRow(rows, []any{&g, &n, &done, &calls}, func() error {
			d := get(g)
			d.TurnsToday, d.TurnsAnswered, d.MasterCalls = n, done, calls
			return nil
		}); err != nil {
			return fmt.Errorf("turns: %w", err)
		}

		args = []any{day, time.Now().Add(-time.Hour)}
		rows, err = tx.Query(ctx, `
			SELECT s.guild_id, extract(hour FROM t.ended_at AT TIME ZONE 'UTC')::int, t.state = 'done',
			       count(*) FILTER (WHERE t.ended_at >= $1)::int,
			       count(*) FILTER (WHERE t.state IN ('failed', 'timeout') AND t.ended_at > $2)::int
			FROM tasks t JOIN sessions s ON s.id = t.session_id
			WHERE t.ended_at >= least($1, $2) AND t.state <> 'cancelled'`+guildCond("s.guild_id", guilds, &args)+`
			GROUP BY 1, 2, 3`, args...)
		if err != nil {
			return fmt.Errorf("tasks: %w", err)
		}
		var hour, errs int
		var ok bool
		if _, err := pgx.ForEachRow(rows, []any{&g, &hour, &ok, &n, &errs}, func() error {
			d := get(g)
			d.TaskErrors += errs
			d.TasksToday += n
			if hour >= 0 && hour < 24 && ok {
				d.DoneByHour[hour] += n
			} else if hour >= 0 && hour < 24 {
				d.OtherByHour[hour] += n
			}
			return nil
		}); err != nil {
			return fmt.Errorf("tasks: %w", err)
		}

		args = []any{day}
		rows, err = tx.Query(ctx, `
			SELECT u.guild_id, u.model, u.prompt_tokens, u.completion_tokens
			FROM guild_usage u WHERE u.day = ($1::timestamptz AT TIME ZONE 'UTC')::date`+guildCond("u.guild_id", guilds, &args)+`
			ORDER BY 1, 2`, args...)
		if err != nil {
			return fmt.Errorf("usage: %w", err)
		}
		var u master.Usage
		if _, err := pgx.ForEachRow(rows, []any{&g, &u.Model, &u.PromptTokens, &u.CompletionTokens}, func() error {
			d := get(g)
			d.Usage = append(d.Usage, u)
			return nil
		}); err != nil {
			return fmt.Errorf("usage: %w", err)
		}

		args = []any{time.Now().Add(-time.Hour)}
		rows, err = tx.Query(ctx, `
			SELECT s.guild_id, 'approvals', count(*) FROM approvals a JOIN sessions s ON s.id = a.session_id
			WHERE a.state = 'pending'`+guildCond("s.guild_id", guilds, &args)+` GROUP BY 1
			UNION ALL
			SELECT s.guild_id, 'outbox', count(*) FROM outbox o JOIN sessions s ON s.id = o.session_id
			WHERE o.state = 'pending'`+guildCond("s.guild_id", guilds, &args)+` GROUP BY 1
			UNION ALL
			SELECT s.guild_id, 'outbox_failed', count(*) FROM outbox o JOIN sessions s ON s.id = o.session_id
			WHERE o.state = 'failed' AND o.created_at > $1`+guildCond("s.guild_id", guilds, &args)+` GROUP BY 1
			UNION ALL
			SELECT l.guild_id, 'budget', coalesce(l.daily_tokens, 0) FROM guild_limits l
			WHERE true`+guildCond("l.guild_id", guilds, &args), args...)
		if err != nil {
			return fmt.Errorf("waiting: %w", err)
		}
		var what string
		var v int64
		_, err = pgx.ForEachRow(rows, []any{&g, &what, &v}, func() error {
			d := get(g)
			switch what {
			case "approvals":
				d.ApprovalsWaiting = int(v)
			case "outbox":
				d.OutboxPending = int(v)
			case "outbox_failed":
				d.OutboxErrors = int(v)
			case "budget":
				d.DailyBudget = v
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("waiting: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("overview: %w", err)
	}
	out := make([]dashboard.GuildDay, 0, len(order))
	for _, g := range order {
		out = append(out, *byGuild[g])
	}
	return out, nil
}
