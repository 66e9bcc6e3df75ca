package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// insertRoster writes a session's roles in one statement, in order.
func insertRoster(ctx context.Context, tx pgx.Tx, sessionID int64, roster []master.Role) error {
	n := len(roster)
	names, descs, prompts, models, avatars := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	temps, maxTokens, timeouts := make([]*float32, n), make([]*int32, n), make([]*int32, n)
	tools := make([][]string, n) // ragged: passed as JSON, since Postgres arrays are not
	for i, r := range roster {
		tools[i] = cleanAll(r.Tools)
		if tools[i] == nil {
			tools[i] = []string{}
		}
		names[i], descs[i], prompts[i], models[i] = r.Name, cleanText(r.Description), cleanText(r.Prompt), r.Model
		avatars[i] = cleanText(r.Avatar)
		temps[i] = r.Temperature
		if r.MaxTokens > 0 {
			v := int32(r.MaxTokens)
			maxTokens[i] = &v
		}
		if r.Timeout > 0 {
			v := int32(r.Timeout / time.Millisecond)
			timeouts[i] = &v
		}
	}
	toolsJSON, err := marshalJSON(tools)
	if err != nil {
		return fmt.Errorf("insert roster: %w", err)
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO session_roles (session_id, name, description, prompt, model, temperature, max_tokens, timeout_ms, tools, position, avatar)
		SELECT $1, r.name, r.description, r.prompt, r.model, r.temperature, r.max_tokens, r.timeout_ms,
		       ARRAY(SELECT jsonb_array_elements_text($9::jsonb -> (r.position::int - 1))), r.position, r.avatar
		FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::real[], $7::int[], $8::int[], $10::text[])
			WITH ORDINALITY AS r(name, description, prompt, model, temperature, max_tokens, timeout_ms, avatar, position)`,
		sessionID, names, descs, prompts, models, temps, maxTokens, timeouts, toolsJSON, avatars)
	if err != nil {
		return fmt.Errorf("insert roster: %w", err)
	}
	return nil
}

// Roster returns a session's roles in order.
func (s *Store) Roster(ctx context.Context, sessionID int64) ([]master.Role, error) {
	return roster(ctx, s.pool, sessionID)
}

func roster(ctx context.Context, q querier, sessionID int64) ([]master.Role, error) {
	rows, err := q.Query(ctx, `
		SELECT `+roleColumns+`
		FROM session_roles WHERE session_id = $1 ORDER BY position, name`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("roster: %w", err)
	}
	roles, err := pgx.CollectRows(rows, scanRole)
	if err != nil {
		return nil, fmt.Errorf("roster: %w", err)
	}
	return roles, nil
}

// roleColumns is the select list scanRole reads, from session_roles or
// channel_roles.
const roleColumns = `name, description, prompt, model, temperature, max_tokens, timeout_ms, tools`

func scanRole(row pgx.CollectableRow) (master.Role, error) { return scanRoleAnd(row) }

// scanRoleAnd reads one row of roleColumns followed by extra columns.
func scanRoleAnd(row pgx.Row, extra ...any) (master.Role, error) {
	var r master.Role
	var maxTokens, timeout *int32
	if err := row.Scan(append([]any{&r.Name, &r.Description, &r.Prompt, &r.Model, &r.Temperature, &maxTokens, &timeout, &r.Tools}, extra...)...); err != nil {
		return r, err
	}
	return fillRole(r, maxTokens, timeout), nil
}

// fillRole completes a role scanned from roleColumns.
func fillRole(r master.Role, maxTokens, timeout *int32) master.Role {
	if len(r.Tools) == 0 {
		r.Tools = nil
	}
	if maxTokens != nil {
		r.MaxTokens = int(*maxTokens)
	}
	if timeout != nil {
		r.Timeout = time.Duration(*timeout) * time.Millisecond
	}
	return r
}

// replaceRoster swaps a session's roster and cancels the queued tasks of
// the roles it drops, and those waiting for an approval. It returns the
// dropped names.
func replaceRoster(ctx context.Context, tx pgx.Tx, sessionID int64, roster []master.Role) ([]string, error) {
	rows, err := tx.Query(ctx, `DELETE FROM session_roles WHERE session_id = $1 RETURNING name`, sessionID)
	if err != nil {
		return nil, err
	}
	old, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if err := insertRoster(ctx, tx, sessionID, roster); err != nil {
		return nil, err
	}
	var removed []string
	for _, name := range old {
		if !slices.ContainsFunc(roster, func(r master.Role) bool { return r.Name == name }) {
			removed = append(removed, name)
		}
	}
	if len(removed) == 0 {
		return nil, nil
	}
	rows, err = tx.Query(ctx, `
		WITH cancelled AS (
			UPDATE tasks SET state = 'cancelled', error = 'role removed from the team',
			       ended_at = now(), updated_at = now()
			WHERE session_id = $1 AND state IN ('queued', 'approval') AND role = ANY ($2)
			RETURNING id
		), unasked AS (
			UPDATE approvals a SET state = 'cancelled', decided_at = now()
			FROM cancelled c WHERE a.task_id = c.id AND a.state = 'pending'
		)
		SELECT id FROM cancelled`, sessionID, removed)
	if err != nil {
		return nil, err
	}
	cancelled, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	if len(cancelled) > 0 {
		if _, err := cancelDependents(ctx, tx, cancelled); err != nil {
			return nil, err
		}
	}
	return removed, nil
}

// ReplanSession replaces an active session's roster, cancelling queued
// tasks of the roles it drops, and queues notice for its thread.
func (s *Store) ReplanSession(ctx context.Context, sessionID int64, roster []master.Role, notice string) ([]string, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	defer tx.Rollback(ctx)
	var threadID string
	err = tx.QueryRow(ctx, `SELECT thread_id FROM sessions WHERE id = $1 AND state = 'active' FOR UPDATE`, sessionID).Scan(&threadID)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("replan session %d: %w", sessionID, master.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	removed, err := replaceRoster(ctx, tx, sessionID, roster)
	if err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	if err := queueNotice(ctx, tx, sessionID, master.OutNotice, threadID, notice); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	if err := notify(ctx, tx, WakeTasks+WakeOutbox, sessionID); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("replan: %w", err)
	}
	return removed, nil
}
