package sim

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// watchTransitions installs triggers in the sequence's database that
// record, as they happen, transitions the checks must see at once rather
// than after the event (by then the turn that started out of order may
// have ended): a queued turn started while an older one was still queued,
// and a master call counted on a turn whose round has unfinished tasks.
func (s *sequence) watchTransitions() {
	s.exec(`CREATE TABLE sim_violations (id serial, what text NOT NULL)`)
	s.exec(`CREATE FUNCTION sim_turn_watch() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF OLD.state = 'queued' AND NEW.state = 'running' AND EXISTS (
			SELECT 1 FROM turns q WHERE q.session_id = NEW.session_id AND q.state = 'queued' AND q.sort_key < NEW.sort_key) THEN
			INSERT INTO sim_violations (what) VALUES (format('turn %s (message %s) started while the older turn of message %s was queued',
				NEW.id, NEW.message_id, (SELECT q.message_id FROM turns q WHERE q.session_id = NEW.session_id AND q.state = 'queued'
				                         AND q.sort_key < NEW.sort_key ORDER BY q.sort_key LIMIT 1)));
		END IF;
		IF NEW.master_calls > OLD.master_calls AND EXISTS (
			SELECT 1 FROM tasks t WHERE t.turn_id = NEW.id AND t.round = NEW.round AND t.state IN ('queued', 'running', 'approval')) THEN
			INSERT INTO sim_violations (what) VALUES (format('the master decided on turn %s while round %s had unfinished tasks', NEW.id, NEW.round));
		END IF;
		RETURN NEW;
	END $$`)
	s.exec(`CREATE TRIGGER sim_turn_watch AFTER UPDATE ON turns FOR EACH ROW EXECUTE FUNCTION sim_turn_watch()`)
}

// failures records the orchestrator's step failures: in a sequence, every
// one is a bug (the faults the sequence injects are model faults, which
// are handled without one).
type failures struct {
	mu   sync.Mutex
	errs []string
}

func (f *failures) Enabled(context.Context, slog.Level) bool { return true }
func (f *failures) WithAttrs([]slog.Attr) slog.Handler       { return f }
func (f *failures) WithGroup(string) slog.Handler            { return f }
func (f *failures) Handle(_ context.Context, r slog.Record) error {
	if r.Level < slog.LevelError {
		return nil
	}
	for _, fault := range []string{"LLM server refuses", "ceiling", "no usable decision", "master model call failed"} {
		if strings.Contains(r.Message, fault) {
			return nil // what the sequence's model faults lead to
		}
	}
	msg := r.Message
	unreachable := false
	r.Attrs(func(a slog.Attr) bool {
		msg += " " + a.String()
		unreachable = unreachable || (a.Key == "err" && strings.Contains(a.Value.String(), errUnreachable.Error()))
		return true
	})
	if unreachable && strings.Contains(r.Message, "giving up on the turn") {
		return nil // the model was unreachable more often than retries allow: the turn ends with an apology
	}
	f.mu.Lock()
	f.errs = append(f.errs, msg)
	f.mu.Unlock()
	return nil
}

// check holds after every event.
func (s *sequence) check() {
	s.t.Helper()
	s.errs.mu.Lock()
	errs := s.errs.errs
	s.errs.mu.Unlock()
	if len(errs) > 0 {
		s.fatalf("the orchestrator logged errors:\n%s", strings.Join(errs, "\n"))
	}
	var over []string
	rows, err := s.pool.Query(s.ctx, `SELECT id || ':' || master_calls FROM turns WHERE master_calls > $1`, maxCalls)
	if err != nil {
		s.fatalf("check: %v", err)
	}
	if over, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		s.fatalf("check: %v", err)
	}
	if len(over) > 0 {
		s.fatalf("turns over the ceiling of %d master calls (turn:calls): %v", maxCalls, over)
	}
	for msg, n := range s.model.perTurn { // counted by the model itself, not the store
		if n > maxCalls {
			s.fatalf("the master's model was called %d times for %q; the ceiling is %d", n, msg, maxCalls)
		}
	}
	var running int
	if err := s.pool.QueryRow(s.ctx, `SELECT count(*) FROM turns WHERE session_id = $1 AND state = 'running'`, s.session.ID).Scan(&running); err != nil {
		s.fatalf("check: %v", err)
	}
	if running > 1 {
		s.fatalf("%d turns running at once in one session", running)
	}
	s.checkFiles()
	var open int
	if err := s.pool.QueryRow(s.ctx, `SELECT count(*) FROM turns WHERE session_id = $1 AND state IN ('queued', 'running')`, s.session.ID).Scan(&open); err != nil {
		s.fatalf("check: %v", err)
	}
	if open > maxQueued {
		s.fatalf("%d turns queued or running, more than the queue's %d", open, maxQueued)
	}
	// A task waits for an approval exactly while its request is pending,
	// and holds no lease meanwhile.
	var paused int
	if err := s.pool.QueryRow(s.ctx, `SELECT
		(SELECT count(*) FROM tasks t WHERE t.state = 'approval' AND (t.lease_until IS NOT NULL OR t.worker_id IS NOT NULL
		    OR (SELECT count(*) FROM approvals a WHERE a.task_id = t.id AND a.state = 'pending') <> 1))
		+ (SELECT count(*) FROM approvals a JOIN tasks t ON t.id = a.task_id WHERE a.state = 'pending' AND t.state <> 'approval')`).Scan(&paused); err != nil {
		s.fatalf("check: %v", err)
	}
	if paused > 0 {
		s.fatalf("%d tasks and approval requests disagree on who waits for a decision", paused)
	}
	var violations []string
	rows, err = s.pool.Query(s.ctx, `SELECT what FROM sim_violations ORDER BY id`)
	if err == nil {
		violations, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		s.fatalf("check: %v", err)
	}
	if len(violations) > 0 {
		s.fatalf("%s", strings.Join(violations, "\n"))
	}
	// At most one turn waits for the user's answer, and it is the latest:
	// a question closes the turn that waited before it, and a message
	// recorded after the question closes it (or answers it and sends it
	// back to work).
	var stale string
	if err := s.pool.QueryRow(s.ctx, `
		SELECT coalesce(string_agg(format('turn %s (message %s) waits, yet turn %s (message %s, %s) came after its question',
		       w.id, w.message_id, u.id, u.message_id, u.state), '; '), '')
		FROM turns w JOIN turns u ON u.session_id = w.session_id AND u.id <> w.id
		WHERE w.session_id = $1 AND w.state = 'waiting'
		  AND (u.state = 'waiting' OR (u.state IN ('queued', 'running') AND u.sort_key > w.sort_key AND u.created_at > w.updated_at))`,
		s.session.ID).Scan(&stale); err != nil {
		s.fatalf("check: %v", err)
	}
	if stale != "" {
		s.fatalf("%s", stale)
	}
	s.checkDelivery()
}

// checkEnd holds once the sequence has settled: every user message ended
// in a known way, and nothing is left open.
func (s *sequence) checkEnd() {
	s.t.Helper()
	var dissolved bool
	if err := s.pool.QueryRow(s.ctx, `SELECT state = 'dissolved' FROM sessions WHERE id = $1`, s.session.ID).Scan(&dissolved); err != nil {
		s.fatalf("checkEnd: %v", err)
	}
	var openTasks int
	if err := s.pool.QueryRow(s.ctx, `SELECT count(*) FROM tasks WHERE state IN ('queued', 'running', 'approval')`).Scan(&openTasks); err != nil {
		s.fatalf("checkEnd: %v", err)
	}
	if openTasks > 0 {
		s.fatalf("%d tasks never ended", openTasks)
	}
	s.checkEndFiles(dissolved)
	for _, id := range s.messages {
		var turnID int64
		var state string
		var replies, questions, sentReplies, failedReplies, pendingQuestion int
		err := s.pool.QueryRow(s.ctx, `
			SELECT u.id, u.state,
			       (SELECT count(DISTINCT seq) FROM outbox WHERE turn_id = u.id AND kind = 'reply'),
			       (SELECT count(DISTINCT seq) FROM outbox WHERE turn_id = u.id AND kind = 'question'),
			       (SELECT count(*) FROM outbox WHERE turn_id = u.id AND kind = 'reply' AND state = 'sent'),
			       (SELECT count(*) FROM outbox WHERE turn_id = u.id AND kind = 'reply' AND state IN ('failed', 'cancelled')),
			       (SELECT count(*) FROM outbox WHERE turn_id = u.id AND kind = 'question' AND state = 'pending')
			FROM turns u WHERE u.message_id = $1`, id).Scan(&turnID, &state, &replies, &questions, &sentReplies, &failedReplies, &pendingQuestion)
		if err != nil {
			s.fatalf("message %s: %v", id, err)
		}
		what := fmt.Sprintf("message %s (turn %d, %s, %d replies, %d questions)", id, turnID, state, replies, questions)
		switch {
		case replies > 1:
			s.fatalf("%s: more than one reply", what)
		case pendingQuestion > 0:
			s.fatalf("%s: a question was never posted", what)
		case state == "queued" || state == "running":
			if !dissolved {
				s.fatalf("%s: still open once everything settled", what)
			}
		case state == "cancelled":
			if !dissolved {
				s.fatalf("%s: cancelled, but the team was not dissolved", what)
			}
		case state == "refused":
			if replies+questions > 0 {
				s.fatalf("%s: refused, yet answered", what)
			}
		case state == "waiting":
			if questions == 0 {
				s.fatalf("%s: waits for an answer to no question", what)
			}
		case replies == 1:
			if sentReplies == 0 && failedReplies == 0 {
				s.fatalf("%s: its reply was never delivered", what)
			}
		case questions > 0:
			// It ended on a question that the next message answered.
		case s.answers[id]:
			// It answered workers' questions: its turn goes on in the
			// turn that asked.
		default:
			s.fatalf("%s: ended with no answer at all", what)
		}
	}
}
