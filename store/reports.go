package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/callonbot/callon/master"
)

// ReportBack records a report from the guarded turn's session to its
// report_to channel and delivers it in the same transaction: injected as a
// turn of the team active in that thread, or queued there as a plain
// message. So a report is delivered exactly once, whatever fails after.
// master.ErrPingPong and master.ErrReportCapped refuse it.
func (s *Store) ReportBack(ctx context.Context, g master.Guard, r master.NewReport) (master.Report, error) {
	tx, err := s.begin(ctx)
	if err != nil {
		return master.Report{}, fmt.Errorf("report back: %w", err)
	}
	defer tx.Rollback(ctx)
	turn, err := checkGuard(ctx, tx, g)
	if err != nil {
		return master.Report{}, fmt.Errorf("report back: %w", err)
	}
	from, err := scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions s WHERE s.id = $1`, g.SessionID))
	if err != nil {
		return master.Report{}, fmt.Errorf("report back: %w", err)
	}
	if from.ReportTo == "" && from.CallbackURL == "" {
		return master.Report{}, errors.New("report back: the session reports nowhere")
	}
	if turn.ReportID != 0 {
		var senderThread string
		if err := tx.QueryRow(ctx, `SELECT s.thread_id FROM reports r JOIN sessions s ON s.id = r.from_session
			WHERE r.id = $1`, turn.ReportID).Scan(&senderThread); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return master.Report{}, fmt.Errorf("report back: %w", err)
		}
		if senderThread == from.ReportTo {
			return master.Report{}, master.ErrPingPong
		}
	}
	rep, err := s.deliverReport(ctx, tx, from, turn.ID, r)
	if err != nil {
		return master.Report{}, fmt.Errorf("report back: %w", err)
	}
	if err := notify(ctx, tx, WakeMaster+WakeOutbox, from.ID, rep.ToSession); err != nil {
		return master.Report{}, fmt.Errorf("report back: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return master.Report{}, fmt.Errorf("report back: %w", err)
	}
	return rep, nil
}

// deliverReport writes a report of from to its report_to and delivers it,
// with REPORT signals. The caller wakes from and rep.ToSession (0 when the
// report was posted) with its transaction's one notification.
func (s *Store) deliverReport(ctx context.Context, tx pgx.Tx, from master.Session, fromTurn int64, r master.NewReport) (master.Report, error) {
	if r.Cap > 0 && !r.Final {
		// Reports between the same two places, both ways, in the last hour.
		var n int
		if err := tx.QueryRow(ctx, `
			SELECT count(*) FROM reports r JOIN sessions f ON f.id = r.from_session
			WHERE r.created_at > now() - interval '1 hour'
			  AND ((r.from_session = $1 AND r.to_channel = $2)
			    OR (f.thread_id = $2 AND r.to_channel = $3))`, from.ID, from.ReportTo, from.ThreadID).Scan(&n); err != nil {
			return master.Report{}, err
		}
		if n >= r.Cap {
			return master.Report{}, fmt.Errorf("%d reports within the hour: %w", n, master.ErrReportCapped)
		}
	}
	var to master.Session
	inject := false
	rep := master.Report{Delivery: "posted"}
	if from.ReportTo == "" { // the callback alone receives it
		rep.Delivery = "callback"
	} else {
		var err error
		to, err = scanSession(tx.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions s
			WHERE s.thread_id = $1 AND s.state = 'active' AND s.id <> $2 FOR SHARE`, from.ReportTo, from.ID))
		inject = err == nil
		if err != nil && !errors.Is(err, master.ErrNotFound) {
			return master.Report{}, err
		}
	}
	var toSession *int64
	if inject {
		rep.Delivery, rep.ToSession, toSession = "injected", to.ID, &to.ID
	}
	// One report per turn: a turn run again after a crash finds its
	// report made.
	err := tx.QueryRow(ctx, `
		INSERT INTO reports (from_session, from_turn, to_channel, summary, final, delivery, to_session)
		VALUES ($1, nullif($2, 0), $3, $4, $5, $6, $7)
		ON CONFLICT (from_turn) WHERE from_turn IS NOT NULL DO NOTHING
		RETURNING id`,
		from.ID, fromTurn, from.ReportTo, cleanText(r.Summary), r.Final, rep.Delivery, toSession).Scan(&rep.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return master.Report{}, master.ErrAlreadyReported
	}
	if err != nil {
		return master.Report{}, err
	}
	payload := map[string]any{"report": rep.ID, "to": from.ReportTo, "delivery": rep.Delivery, "final": r.Final}
	if inject {
		payload["session"] = to.ID
		// The turn's message id is the report's: a report starts one turn.
		if _, err := tx.Exec(ctx, `
			INSERT INTO turns (session_id, message_id, guild_id, channel_id, author_id, content, report_id)
			VALUES ($1, $2, $3, $4, '', $5, $6)`,
			to.ID, fmt.Sprintf("report:%d", rep.ID), to.GuildID, to.ThreadID, cleanText(r.Turn), rep.ID); err != nil {
			return master.Report{}, fmt.Errorf("inject report: %w", err)
		}
		in, _ := marshalJSON(map[string]any{"report": rep.ID, "from_session": from.ID, "from_thread": from.ThreadID, "delivery": "injected"})
		if _, err := addSignal(ctx, tx, to.ID, 0, master.SignalReport, in); err != nil {
			return master.Report{}, err
		}
	} else if rep.Delivery == "posted" {
		// A team a trusted bot started wakes that bot: the report mentions
		// it, and replies to its request when it lands where the bot asked.
		var replyTo string
		if from.RequestedByBot != "" && from.ReportTo == from.ChannelID {
			replyTo = from.RequestMessageID
		}
		if err := postParts(ctx, tx, from.ID, from.ReportTo, fmt.Sprintf("r%d", rep.ID), r.Posted, replyTo, from.RequestedByBot); err != nil {
			return master.Report{}, err
		}
	}
	out, _ := marshalJSON(payload)
	if _, err := addSignal(ctx, tx, from.ID, 0, master.SignalReport, out); err != nil {
		return master.Report{}, err
	}
	if err := s.enqueueWebhook(ctx, tx, from.ID, master.WebhookSessionReported, master.ReportedData(from, rep, r)); err != nil {
		return master.Report{}, err
	}
	if err := enqueueCallback(ctx, tx, from, master.WebhookSessionReported, master.ReportedData(from, rep, r)); err != nil {
		return master.Report{}, err
	}
	return rep, nil
}

// HandBack is what /dissolve needs to know for a final report: how many
// reports the session sent, and its latest answer.
func (s *Store) HandBack(ctx context.Context, sessionID int64) (sent int, lastAnswer string, err error) {
	err = s.pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM reports WHERE from_session = $1),
		coalesce((SELECT string_agg(o.content, E'\n' ORDER BY o.part) FROM outbox o
		          WHERE o.turn_id = (SELECT max(turn_id) FROM outbox WHERE session_id = $1 AND kind = 'reply')
		            AND o.kind = 'reply'), '')`, sessionID).Scan(&sent, &lastAnswer)
	if err != nil {
		return 0, "", fmt.Errorf("hand back: %w", err)
	}
	return sent, lastAnswer, nil
}
