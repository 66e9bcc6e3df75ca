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

const sessionColumns = `s.id, s.guild_id, s.channel_id, s.thread_id, s.owner_id, s.goal, s.state,
	coalesce(s.report_to, ''), coalesce(s.dispatched_by, 0), s.dispatch_depth,
	coalesce(s.api_key, ''), coalesce(s.callback_url, ''), s.prompt_tokens, s.completion_tokens, s.created_at, s.ended_at,
	coalesce(s.requested_by_bot, ''), coalesce(s.request_message_id, ''), s.surface, coalesce(s.attached_to, ''), s.dormant_since,
	s.personas, s.memory, s.review`

// scanSession reads sessionColumns, then extra columns if given.
func scanSession(row pgx.Row, extra ...any) (master.Session, error) {
	var s master.Session
	var ended, dormant *time.Time
	err := row.Scan(append([]any{&s.ID, &s.GuildID, &s.ChannelID, &s.ThreadID, &s.OwnerID, &s.Goal, &s.State,
		&s.ReportTo, &s.DispatchedBy, &s.DispatchDepth, &s.APIKey, &s.CallbackURL, &s.Usage.PromptTokens, &s.Usage.CompletionTokens, &s.CreatedAt, &ended,
		&s.RequestedByBot, &s.RequestMessageID, &s.Surface, &s.AttachedTo, &dormant,
		&s.Features.Personas, &s.Features.Memory, &s.Features.Review}, extra...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return master.Session{}, master.ErrNotFound
	}
	if ended != nil {
		s.EndedAt = *ended
	}
	s.DormantSince = orZero(dormant)
	return s, err
}

// StartSession creates an active session for a thread with its roster and
// queues its kickoff message, in one transaction. master.ErrSessionActive
// when the thread already has an active session; a *master.CapError when
// the guild, or the session's owner, already has as many active sessions
// as caps allow. The caps are counted under a lock per guild, so sessions
// started at once cannot exceed them together.
func (s *Store) StartSession(ctx context.Context, sess master.Session, roster []master.Role, kickoff, brief string, caps master.SessionCaps) (master.Session, error) {
	sess.Goal, kickoff, brief = cleanText(sess.Goal), cleanText(kickoff), cleanText(brief)
	tx, err := s.begin(ctx)
	if err != nil {
		return master.Session{}, fmt.Errorf("start session: %w", err)
	}
	defer tx.Rollback(ctx)
	if caps != (master.SessionCaps{}) {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('sessions/' || $1, 0))`, sess.GuildID); err != nil {
			return master.Session{}, fmt.Errorf("start session: lock guild: %w", err)
		}
		if err := checkCaps(ctx, tx, sess.GuildID, sess.OwnerID, caps); err != nil {
			return master.Session{}, err
		}
	}
	if sess.RequestedByBot != "" && caps.BotPerHour > 0 {
		n, err := botTurns(ctx, tx, sess.GuildID, sess.RequestedByBot)
		if err != nil {
			return master.Session{}, fmt.Errorf("start session: %w", err)
		}
		if n >= caps.BotPerHour {
			return master.Session{}, fmt.Errorf("%d turns within the hour: %w", n, master.ErrBotCapped)
		}
	}
	created, err := scanSession(tx.QueryRow(ctx, `
		INSERT INTO sessions AS s (guild_id, channel_id, thread_id, owner_id, goal, report_to, dispatched_by, dispatch_depth, dispatched_turn,
		                           requested_by_bot, request_message_id, api_key, callback_url, surface, attached_to,
		                           personas, memory, review)
		VALUES ($1, $2, $3, $4, $5, nullif($6, ''), nullif($7, 0), $8, nullif($9, 0), nullif($10, ''), nullif($11, ''), nullif($12, ''), nullif($13, ''),
		        $14, nullif($15, ''), $16, $17, $18)
		RETURNING `+sessionColumns,
		sess.GuildID, sess.ChannelID, sess.ThreadID, sess.OwnerID, sess.Goal, sess.ReportTo, sess.DispatchedBy, sess.DispatchDepth, sess.DispatchedTurn,
		sess.RequestedByBot, sess.RequestMessageID, sess.APIKey, sess.CallbackURL, cmp.Or(sess.Surface, master.SurfaceDiscord), sess.AttachedTo,
		sess.Features.Personas, sess.Features.Memory, cmp.Or(sess.Features.Review, master.ReviewOff)))
	if err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "sessions_active_thread_key" {
			return master.Session{}, master.ErrSessionActive
		}
		if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "sessions_api_key_key" {
			return master.Session{}, master.ErrKeyUsed
		}
		return master.Session{}, fmt.Errorf("start session: %w", err)
	}
	if err := insertRoster(ctx, tx, created.ID, roster); err != nil {
		return master.Session{}, fmt.Errorf("start session: %w", err)
	}
	if err := s.enqueueWebhook(ctx, tx, created.ID, master.WebhookSessionStarted, master.StartedData(created, roster)); err != nil {
		return master.Session{}, fmt.Errorf("start session: %w", err)
	}
	if kickoff != "" {
		if _, err := tx.Exec(ctx, `
			INSERT INTO outbox (session_id, kind, channel_id, content, nonce)
			VALUES ($1, 'kickoff', $2, $3, $4)`,
			created.ID, created.ThreadID, kickoff, fmt.Sprintf("k%d", created.ID)); err != nil {
			return master.Session{}, fmt.Errorf("start session: kickoff: %w", err)
		}
	}
	if brief != "" {
		// The team's first turn: no Discord message, keyed by the session.
		// A trusted bot's request is that bot's turn (its hourly cap
		// counts it); a dispatch's has no author.
		if _, err := tx.Exec(ctx, `
			INSERT INTO turns (session_id, message_id, guild_id, channel_id, author_id, content, author_bot)
			VALUES ($1, $2, $3, $4, $5, $6, $5 <> '')`,
			created.ID, fmt.Sprintf("brief:%d", created.ID), created.GuildID, created.ThreadID, created.RequestedByBot, brief); err != nil {
			return master.Session{}, fmt.Errorf("start session: brief: %w", err)
		}
	}
	if err := notify(ctx, tx, WakeMaster+WakeOutbox, created.ID); err != nil {
		return master.Session{}, fmt.Errorf("start session: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return master.Session{}, fmt.Errorf("start session: %w", err)
	}
	return created, nil
}

// ActiveSession returns the active session of a thread, or master.ErrNotFound.
func (s *Store) ActiveSession(ctx context.Context, threadID string) (master.Session, error) {
	sess, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions s
		WHERE s.thread_id = $1 AND s.state = 'active'`, threadID))
	if err != nil && !errors.Is(err, master.ErrNotFound) {
		return sess, fmt.Errorf("active session: %w", err)
	}
	return sess, err
}

// ActiveSessionAccess returns the active session of a thread and its
// guild's allow lists, in one statement: what a message in a thread is
// checked against. master.ErrNotFound when the thread has no team.
func (s *Store) ActiveSessionAccess(ctx context.Context, threadID string) (master.Session, master.Access, error) {
	var rules [][3]string
	sess, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+`,
		       coalesce((SELECT json_agg(json_build_array(a.action, a.kind, a.target_id) ORDER BY a.action, a.kind, a.added_at, a.target_id)
		                 FROM access_rules a WHERE a.guild_id = s.guild_id), '[]')
		FROM sessions s WHERE s.thread_id = $1 AND s.state = 'active'`, threadID), &rules)
	if err != nil {
		if !errors.Is(err, master.ErrNotFound) {
			err = fmt.Errorf("active session: %w", err)
		}
		return sess, nil, err
	}
	acc := make(master.Access, len(rules))
	for i, r := range rules {
		acc[i] = master.AccessRule{Action: master.AccessAction(r[0]), Kind: master.AccessKind(r[1]), ID: r[2]}
	}
	return sess, acc, nil
}

// Session returns a session by id, or master.ErrNotFound.
func (s *Store) Session(ctx context.Context, id int64) (master.Session, error) {
	return session(ctx, s.pool, id)
}

func session(ctx context.Context, q querier, id int64) (master.Session, error) {
	sess, err := scanSession(q.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions s WHERE s.id = $1`, id))
	if err != nil && !errors.Is(err, master.ErrNotFound) {
		return sess, fmt.Errorf("session %d: %w", id, err)
	}
	return sess, err
}

// ThreadSessions lists the ids of every session a thread has had, oldest
// first (a thread has at most one active session at a time).
func (s *Store) ThreadSessions(ctx context.Context, threadID string) ([]int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM sessions WHERE thread_id = $1 ORDER BY id`, threadID)
	if err != nil {
		return nil, fmt.Errorf("thread sessions: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("thread sessions: %w", err)
	}
	return ids, nil
}

// CatchUpPoints lists every awake active Discord session with the id of
// the latest Discord message of its thread recorded as a turn.
func (s *Store) CatchUpPoints(ctx context.Context) ([]master.CatchUpPoint, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT s.id, s.guild_id, s.channel_id, s.thread_id, s.created_at,
		       coalesce((SELECT max(u.sort_key) FROM turns u
		                 WHERE u.session_id = s.id AND u.message_id ~ '^[0-9]+$')::text, '')
		FROM sessions s WHERE s.state = 'active' AND s.surface = 'discord' AND s.dormant_since IS NULL ORDER BY s.id`)
	if err != nil {
		return nil, fmt.Errorf("catch-up points: %w", err)
	}
	points, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.CatchUpPoint, error) {
		var p master.CatchUpPoint
		err := r.Scan(&p.SessionID, &p.GuildID, &p.ChannelID, &p.ThreadID, &p.Started, &p.Last)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("catch-up points: %w", err)
	}
	return points, nil
}

// Notice queues a message in an active session's thread.
func (s *Store) Notice(ctx context.Context, sessionID int64, text string) error {
	tx, err := s.begin(ctx)
	if err != nil {
		return fmt.Errorf("notice: %w", err)
	}
	defer tx.Rollback(ctx)
	var threadID string
	err = tx.QueryRow(ctx, `SELECT thread_id FROM sessions WHERE id = $1 AND state = 'active'`, sessionID).Scan(&threadID)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("notice: session %d: %w", sessionID, master.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("notice: %w", err)
	}
	if err := queueNotice(ctx, tx, sessionID, master.OutNotice, threadID, text); err != nil {
		return fmt.Errorf("notice: %w", err)
	}
	if err := notify(ctx, tx, WakeOutbox, sessionID); err != nil {
		return fmt.Errorf("notice: %w", err)
	}
	return tx.Commit(ctx)
}

// SessionStats counts a session's turns and tasks, and reads its tokens.
func (s *Store) SessionStats(ctx context.Context, sessionID int64) (master.SessionStats, error) {
	st := master.SessionStats{TasksDone: map[string]int{}}
	if err := s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM turns WHERE session_id = $1),
		(SELECT count(*) FROM tasks WHERE session_id = $1),
		coalesce((SELECT prompt_tokens FROM sessions WHERE id = $1), 0),
		coalesce((SELECT completion_tokens FROM sessions WHERE id = $1), 0)`, sessionID).Scan(
		&st.Turns, &st.Tasks, &st.Usage.PromptTokens, &st.Usage.CompletionTokens); err != nil {
		return st, fmt.Errorf("session stats: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT role, count(*) FROM tasks WHERE session_id = $1 AND state = 'done' GROUP BY role`, sessionID)
	if err != nil {
		return st, fmt.Errorf("session stats: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var role string
		var n int
		if err := rows.Scan(&role, &n); err != nil {
			return st, fmt.Errorf("session stats: %w", err)
		}
		st.TasksDone[role] = n
	}
	return st, rows.Err()
}

// TeamView reads what /team shows: the session, its roster, its open turn
// (else its latest) with that turn's tasks and progress, its spending, and
// its latest signals, oldest first.
func (s *Store) TeamView(ctx context.Context, sessionID int64, signals int) (master.TeamView, error) {
	var v master.TeamView
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly, IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return v, fmt.Errorf("team view: %w", err)
	}
	defer tx.Rollback(ctx)
	if v.Session, err = session(ctx, tx, sessionID); err != nil {
		return v, err
	}
	if v.Roster, err = roster(ctx, tx, sessionID); err != nil {
		return v, err
	}
	turn, err := scanTurn(tx.QueryRow(ctx, `SELECT `+turnColumns+` FROM turns u WHERE u.session_id = $1
		ORDER BY (u.state IN ('queued', 'running', 'waiting')) DESC, u.id DESC LIMIT 1`, sessionID))
	switch {
	case errors.Is(err, master.ErrNotFound):
	case err != nil:
		return v, fmt.Errorf("team view: %w", err)
	default:
		v.Turn = &turn
		if v.Tasks, err = turnTasks(ctx, tx, turn.ID); err != nil {
			return v, fmt.Errorf("team view: %w", err)
		}
		if v.Progress, err = progress(ctx, tx, v.Tasks); err != nil {
			return v, err
		}
		if v.Calls, err = activeCalls(ctx, tx, v.Tasks); err != nil {
			return v, err
		}
	}
	if v.Dispatched, err = dispatched(ctx, tx, sessionID); err != nil {
		return v, err
	}
	if v.Spend, err = sessionSpend(ctx, tx, sessionID); err != nil {
		return v, err
	}
	if v.Presence, err = teamPresence(ctx, tx, v.Session); err != nil {
		return v, err
	}
	names := make([]string, len(v.Roster))
	for i, r := range v.Roster {
		names[i] = r.Name
	}
	if v.Reliability, err = reliability(ctx, tx, master.ReliabilityQuery{Guilds: []string{v.Session.GuildID},
		Channel: v.Session.ChannelID, Roles: names, Since: time.Now().Add(-master.ReliabilityWindow)}); err != nil {
		return v, fmt.Errorf("team view: %w", err)
	}
	slices.SortStableFunc(v.Reliability, func(a, b master.Reliability) int { // roster order
		return slices.Index(names, a.Role) - slices.Index(names, b.Role)
	})
	rows, err := tx.Query(ctx, `SELECT s.id, s.session_id, coalesce(s.task_id, 0), s.kind, s.payload, s.created_at,
		       coalesce(t.role, '')
		FROM (SELECT * FROM signals WHERE session_id = $1 ORDER BY id DESC LIMIT $2) s
		LEFT JOIN tasks t ON t.id = s.task_id
		ORDER BY s.id`, sessionID, signals)
	if err != nil {
		return v, fmt.Errorf("team view: signals: %w", err)
	}
	v.Signals, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Signal, error) {
		var sg master.Signal
		err := r.Scan(&sg.ID, &sg.SessionID, &sg.TaskID, &sg.Kind, &sg.Payload, &sg.At, &sg.Role)
		return sg, err
	})
	if err != nil {
		return v, fmt.Errorf("team view: signals: %w", err)
	}
	return v, tx.Commit(ctx)
}

// checkCaps returns a *master.CapError when the guild, or ownerID in it,
// has as many active sessions as caps allow.
func checkCaps(ctx context.Context, q querier, guildID, ownerID string, caps master.SessionCaps) error {
	var guild, owner int
	if err := q.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE owner_id = $2)
		FROM sessions WHERE guild_id = $1 AND state = 'active' AND dormant_since IS NULL`, guildID, ownerID).Scan(&guild, &owner); err != nil {
		return fmt.Errorf("count active sessions: %w", err)
	}
	var capped *master.CapError
	switch {
	case caps.PerGuild > 0 && guild >= caps.PerGuild:
		capped = &master.CapError{Limit: caps.PerGuild}
	case caps.PerUser > 0 && owner >= caps.PerUser:
		capped = &master.CapError{PerUser: true, Limit: caps.PerUser}
	default:
		return nil
	}
	// The refusal names the owner's oldest teams, to end or let sleep.
	rows, err := q.Query(ctx, `SELECT `+sessionColumns+` FROM sessions s
		WHERE s.guild_id = $1 AND s.owner_id = $2 AND s.state = 'active' AND s.dormant_since IS NULL
		ORDER BY s.created_at, s.id LIMIT 3`, guildID, ownerID)
	if err != nil {
		return fmt.Errorf("oldest active sessions: %w", err)
	}
	if capped.Oldest, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Session, error) { return scanSession(r) }); err != nil {
		return fmt.Errorf("oldest active sessions: %w", err)
	}
	return capped
}

// CheckCaps returns a *master.CapError when a new session of ownerID in
// the guild would exceed caps now: a check before work that a refusal
// would waste (opening a thread). StartSession checks again, atomically.
func (s *Store) CheckCaps(ctx context.Context, guildID, ownerID string, caps master.SessionCaps) error {
	return checkCaps(ctx, s.pool, guildID, ownerID, caps)
}

// ActiveSessions counts a guild's active sessions that are awake (a
// dormant team counts against no cap).
func (s *Store) ActiveSessions(ctx context.Context, guildID string) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM sessions WHERE guild_id = $1 AND state = 'active' AND dormant_since IS NULL`, guildID).Scan(&n); err != nil {
		return 0, fmt.Errorf("active sessions: %w", err)
	}
	return n, nil
}

// dispatched lists the sessions a session dispatched, oldest first.
func dispatched(ctx context.Context, q querier, sessionID int64) ([]master.Session, error) {
	rows, err := q.Query(ctx, `SELECT `+sessionColumns+` FROM sessions s WHERE s.dispatched_by = $1 ORDER BY s.id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("dispatched: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (master.Session, error) { return scanSession(r) })
	if err != nil {
		return nil, fmt.Errorf("dispatched: %w", err)
	}
	return out, nil
}

// DispatchedBy returns the active session turn turnID dispatched to a
// channel, or master.ErrNotFound.
func (s *Store) DispatchedByTurn(ctx context.Context, turnID int64, channelID string) (master.Session, error) {
	sess, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions s
		WHERE s.dispatched_turn = $1 AND s.channel_id = $2 ORDER BY s.id LIMIT 1`, turnID, channelID))
	if err != nil && !errors.Is(err, master.ErrNotFound) {
		return sess, fmt.Errorf("dispatched by turn: %w", err)
	}
	return sess, err
}
