package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// messenger is the Discord the dispatcher posts to: it fails now and
// then, and records every message it posted by nonce, so a message
// posted twice is seen.
type messenger struct {
	mu       sync.Mutex
	rng      *rand.Rand
	failures bool // inject failures; off while the sequence settles
	seen     map[string]string
	twice    []string
	next     int
}

func (m *messenger) Send(_ context.Context, msg master.OutMessage) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failures {
		switch m.rng.IntN(100) {
		case 0:
			return "", fmt.Errorf("%w: 50013 Missing Permissions", master.ErrPermanent)
		case 1, 2, 3, 4, 5, 6, 7, 8:
			return "", errors.New("503 Service Unavailable")
		}
	}
	if _, ok := m.seen[msg.Nonce]; ok {
		m.twice = append(m.twice, msg.Nonce)
	}
	m.next++
	id := strconv.Itoa(m.next)
	m.seen[msg.Nonce] = id
	return id, nil
}

func (m *messenger) Find(_ context.Context, msg master.OutMessage) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen[msg.Nonce], nil
}

func (m *messenger) Edit(context.Context, string, string, string) error { return nil }
func (m *messenger) Typing(context.Context, string) error               { return nil }
func (m *messenger) Archive(context.Context, string) error              { return nil }

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
	s.out.mu.Lock()
	twice := s.out.twice
	s.out.mu.Unlock()
	if len(twice) > 0 {
		s.fatalf("messages posted twice (nonces): %v", twice)
	}
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
