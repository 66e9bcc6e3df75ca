package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// trackScan bounds how many of a role's latest tasks, over every
// channel, the master's pre-send check looks through for the
// master.TrackLen of its own channel: a read before every decision must
// not grow with the deployment's history. A role name used in many busy
// channels may so be judged on fewer than TrackLen tasks.
const trackScan = 100

// rosterTracksSQL is the roster of session $1 with each role's record
// in the session's channel (master.RoleTrack): one statement, which
// TurnReads sends in place of the roster alone. Each role's lateral read
// walks its ended tasks newest first (tasks_role_ended_idx), at most
// trackScan rows, each looking its session's channel up by primary key:
// the cost does not grow with the number of sessions.
var rosterTracksSQL = `
	SELECT ` + roleColumns + `, tr.last, tr.failed, tr.timed_out, tr.blocked, tr.need_info, r.avatar
	FROM session_roles r
	CROSS JOIN LATERAL (
		SELECT count(*)::int AS last,
		       count(*) FILTER (WHERE x.state = 'failed')::int AS failed,
		       count(*) FILTER (WHERE x.state = 'timeout')::int AS timed_out,
		       count(*) FILTER (WHERE x.state = 'blocked')::int AS blocked,
		       count(*) FILTER (WHERE x.state = 'need_info')::int AS need_info
		FROM (SELECT t.state FROM (
		        SELECT t.state, t.session_id, t.ended_at, t.id FROM tasks t
		        WHERE t.role = r.name AND t.ended_at IS NOT NULL
		        ORDER BY t.ended_at DESC, t.id DESC LIMIT ` + strconv.Itoa(trackScan) + `) t
		      WHERE t.state <> 'cancelled'
		        AND (SELECT s.channel_id FROM sessions s WHERE s.id = t.session_id) = (SELECT channel_id FROM sessions WHERE id = $1)
		      ORDER BY t.ended_at DESC, t.id DESC LIMIT ` + strconv.Itoa(master.TrackLen) + `) x
	) tr
	WHERE r.session_id = $1
	ORDER BY r.position, r.name`

// collectRosterTracks reads the rows of rosterTracksSQL.
func collectRosterTracks(rows pgx.Rows) ([]master.Role, map[string]master.RoleTrack, error) {
	tracks := map[string]master.RoleTrack{}
	roles, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (master.Role, error) {
		var r master.Role
		var tr master.RoleTrack
		var maxTokens, timeout *int32
		if err := row.Scan(&r.Name, &r.Description, &r.Prompt, &r.Model, &r.Temperature, &maxTokens, &timeout, &r.Tools,
			&tr.Last, &tr.Failed, &tr.Timeout, &tr.Blocked, &tr.NeedInfo, &r.Avatar); err != nil {
			return r, err
		}
		r = fillRole(r, maxTokens, timeout)
		if tr.Last > 0 {
			tracks[r.Name] = tr
		}
		return r, nil
	})
	return roles, tracks, err
}

// reliabilitySQL aggregates the tasks that ended in a window by guild,
// channel and role; the conditions are appended where %s stands.
var reliabilitySQL = `
	WITH t AS (
		SELECT s.guild_id, s.channel_id, t.role, t.state, t.ended_at,
		       extract(epoch FROM t.ended_at - t.started_at) AS secs,
		       t.prompt_tokens + t.completion_tokens AS tokens,
		       CASE WHEN t.state = 'blocked' THEN coalesce(t.result, '') ELSE coalesce(t.error, '') END AS why,
		       row_number() OVER (PARTITION BY s.guild_id, s.channel_id, t.role ORDER BY t.ended_at DESC, t.id DESC) AS n,
		       rv.verdict
		FROM tasks t JOIN sessions s ON s.id = t.session_id
		LEFT JOIN turn_reviews rv ON rv.turn_id = t.turn_id AND t.state = 'done'
		WHERE t.ended_at > $1 AND t.state <> 'cancelled' %s
	), open AS (
		SELECT s.guild_id, s.channel_id, t.role, count(*)::int AS n
		FROM (SELECT session_id, role FROM tasks WHERE state = 'queued'
		      UNION ALL SELECT session_id, role FROM tasks WHERE state = 'running'
		      UNION ALL SELECT session_id, role FROM tasks WHERE state = 'approval') t
		JOIN sessions s ON s.id = t.session_id
		WHERE true %s
		GROUP BY 1, 2, 3
	)
	SELECT t.guild_id, t.channel_id, t.role, count(*)::int,
	       count(*) FILTER (WHERE state = 'done')::int, count(*) FILTER (WHERE state = 'failed')::int,
	       count(*) FILTER (WHERE state = 'blocked')::int, count(*) FILTER (WHERE state = 'need_info')::int,
	       count(*) FILTER (WHERE state = 'timeout')::int,
	       coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY secs), 0)::float8,
	       coalesce(percentile_cont(0.9) WITHIN GROUP (ORDER BY secs), 0)::float8,
	       coalesce(avg(tokens), 0)::bigint,
	       coalesce(left((array_agg(why ORDER BY t.n) FILTER (WHERE state IN ('failed', 'timeout', 'blocked')))[1], 300), ''),
	       (array_agg(ended_at ORDER BY t.n) FILTER (WHERE state IN ('failed', 'timeout', 'blocked')))[1],
	       array_agg(state ORDER BY t.n DESC) FILTER (WHERE t.n <= ` + strconv.Itoa(master.TrendLen) + `),
	       coalesce(max(o.n), 0),
	       count(*) FILTER (WHERE verdict IN ('pass', 'caveat', 'revise'))::int, count(*) FILTER (WHERE verdict = 'revise')::int
	FROM t LEFT JOIN open o USING (guild_id, channel_id, role)
	GROUP BY 1, 2, 3
	ORDER BY 1, 2, 3
	LIMIT 2000`

// reliability reads roles' records (master.Reliability) from their task
// rows in one statement: the tasks that ended in the window, by guild,
// channel and role, with the open tasks of those roles now. A role with
// open tasks and none ended in the window is not listed.
func reliability(ctx context.Context, q querier, f master.ReliabilityQuery) ([]master.Reliability, error) {
	args := []any{f.Since}
	var cond []string
	if f.Guilds != nil {
		args = append(args, f.Guilds)
		cond = append(cond, "s.guild_id = ANY ($"+strconv.Itoa(len(args))+")")
	}
	if f.Channel != "" {
		args = append(args, f.Channel)
		cond = append(cond, "s.channel_id = $"+strconv.Itoa(len(args)))
	}
	if f.Roles != nil {
		args = append(args, f.Roles)
		cond = append(cond, "t.role = ANY ($"+strconv.Itoa(len(args))+")")
	}
	where := ""
	for _, c := range cond {
		where += " AND " + c
	}
	rows, err := q.Query(ctx, fmt.Sprintf(reliabilitySQL, where, where), args...)
	if err != nil {
		return nil, fmt.Errorf("reliability: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (master.Reliability, error) {
		var r master.Reliability
		var median, p90 float64
		var lastAt *time.Time
		var trend []string
		err := row.Scan(&r.GuildID, &r.ChannelID, &r.Role, &r.Tasks, &r.Done, &r.Failed, &r.Blocked, &r.NeedInfo, &r.Timeout,
			&median, &p90, &r.TokensPerTask, &r.LastFailure, &lastAt, &trend, &r.Open, &r.Reviewed, &r.Revised)
		r.Median = time.Duration(median * float64(time.Second)).Round(time.Millisecond)
		r.P90 = time.Duration(p90 * float64(time.Second)).Round(time.Millisecond)
		r.LastFailureAt = orZero(lastAt)
		for _, s := range trend {
			r.Trend = append(r.Trend, master.TaskState(s))
		}
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("reliability: %w", err)
	}
	return out, nil
}

// Reliability reads roles' records per guild, channel and role (see
// master.Reliability) over the tasks that ended since f.Since.
func (s *Store) Reliability(ctx context.Context, f master.ReliabilityQuery) ([]master.Reliability, error) {
	return reliability(ctx, s.pool, f)
}
